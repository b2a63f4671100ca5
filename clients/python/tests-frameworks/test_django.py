"""Django's own test runner on a project whose cache is configured by the one line
(django_site/settings.py), sync and asyncio (django_site/checks_cache_lock.py)."""

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def test_djangos_test_runner_passes_with_the_one_line_cache(redis_server):
    run = subprocess.run(
        [sys.executable, "-m", "django", "test", "django_site.checks_cache_lock", "-v", "2"],
        cwd=HERE, env={**os.environ, "DJANGO_SETTINGS_MODULE": "django_site.settings"},
        capture_output=True, text=True, timeout=240,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Ran 5 tests" in run.stderr and "OK" in run.stderr, run.stderr
