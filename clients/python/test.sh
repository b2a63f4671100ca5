#!/usr/bin/env bash
# Runs the Python client's tests against real redis-server processes with the rlock module.
# Needs: python3 and python3-venv (Debian), redis-server, and the built module
# (target/release/librlock.so, or RLOCK_MODULE). Arguments go to pytest.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv"

if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --editable "$here[test]"

cd "$here"
"$venv/bin/python" -m pytest "$@"
