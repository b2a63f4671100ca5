#!/usr/bin/env bash
# redis-py's own lock tests (tests/test_lock.py and tests/test_asyncio/test_lock.py from the sdist
# of the redis-py version installed), unmodified, run against rlock.Lock and rlock.asyncio.Lock
# by the plugin rlock_switch.py (which lists the
# cases left out, and why). Needs the venv of ../test.sh and PyPI for the first download.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
python="${PYTHON:-$here/../.venv/bin/python}"
version="$("$python" -c 'import redis; print(redis.__version__)')"
dest="$here/../.upstream/redis-$version"

bash "$here/sdist_tests.sh" "$python" redis "$version" "redis" "$dest" tests pyproject.toml

cd "$dest"
PYTHONPATH="$here" exec "$python" -m pytest -p rlock_switch -p no:cacheprovider -q -o addopts= \
  tests/test_lock.py tests/test_asyncio/test_lock.py
