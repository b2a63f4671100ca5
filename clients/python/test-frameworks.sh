#!/usr/bin/env bash
# Runs rlock.contrib's tests (Celery workers, celery-once, celery-singleton, Django's test runner)
# and python-redis-lock's shape (rlock.redis_lock) against real redis-server processes with the
# rlock module. A venv of its own
# (.venv-frameworks): the Python suite runs beside it with .venv. Needs what test.sh needs.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv-frameworks"

if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --editable "$here[test,celery,django]"

cd "$here"
"$venv/bin/python" -m pytest -p no:cacheprovider tests-frameworks "$@"
