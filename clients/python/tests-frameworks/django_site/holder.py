"""A Django process that takes cache.lock(name) (the watchdog) and says so, then waits to be
killed: python -m django_site.holder <name>."""

import sys

import django

django.setup()

from django.core.cache import cache  # noqa: E402

lock = cache.lock(sys.argv[1])
assert lock.acquire(blocking=False)
print("held", flush=True)
sys.stdin.read()
