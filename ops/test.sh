#!/usr/bin/env bash
# Tests of what operators use: the alert rules (promtool), the metrics script through the real
# prometheus-redis-exporter, and the Debian package (built, installed, loaded, removed: the
# install part only as root). Needs Debian's prometheus and prometheus-redis-exporter packages
# (installed by .ci/run), redis-server and the built module. Arguments go to pytest.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "pytest>=7" "redis>=5"
cd "$here"
exec "$venv/bin/python" -m pytest -q -p no:cacheprovider tests "$@"
