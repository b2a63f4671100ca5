#!/usr/bin/env bash
# python-redis-lock's own tests (tests/ of its 4.0.1 sdist, downloaded from PyPI into
# ../.upstream, not committed), unmodified, run against rlock.redis_lock by the plugin
# redis_lock_switch.py (which lists the cases left out, and why). Needs the venv of
# ../test-frameworks.sh (with the [redis-lock-tests] extra) and the built module.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
python="${PYTHON:-$here/../.venv/bin/python}"
version=4.0.1
dest="$here/../.upstream/python-redis-lock-$version"
module="${RLOCK_MODULE:-$here/../../../target/release/librlock.so}"

bash "$here/sdist_tests.sh" "$python" python-redis-lock "$version" python_redis_lock "$dest" tests pytest.ini

cd "$dest"
RLOCK_MODULE="$(realpath "$module")" RLOCK_WRAPPED_PATH="$PATH" PATH="$here/bin:$PATH" \
  PYTHONPATH="$here/redis_lock_shim:$here" exec "$python" -m pytest -p redis_lock_switch \
  -p no:cacheprovider -q -o addopts= -W ignore::DeprecationWarning tests/test_redis_lock.py "$@"
