#!/usr/bin/env bash
# Builds the fault runner and plays scenarios (see README.md). As root: the runs make network
# namespaces. `bash jepsen/test.sh -short` is make test's version (a partition of the primary,
# in Sentinel and in Cluster, and the two controls, ~2 min); no argument plays the full matrix (make jepsen). Other
# arguments go to the runner (e.g. `-list`, or words that pick scenarios: `pause-holder`).
# Output: target/jepsen/ (target/jepsen/short/ for -short): per scenario its histories, the
# servers' logs, summary.json and, for each failed check, the picture of its smallest failing
# sub-history; results.json for the whole run.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
export RLOCK_MODULE="${RLOCK_MODULE:-${CARGO_TARGET_DIR:-$root/target}/release/librlock.so}"
# A Go new enough for go-redis v9.23 (Debian 12's golang-go 1.19 is not): the Go helper's pick.
PATH="$(bash "$root/clients/go/go-toolchain.sh"):$PATH"
export PATH
export GOTOOLCHAIN=local GOFLAGS=-mod=mod
if [ "$(id -u)" != 0 ]; then
    echo "jepsen/test.sh: needs root (ip netns add); run it with sudo" >&2
    exit 1
fi
if [ ! -f "$RLOCK_MODULE" ]; then
    echo "jepsen/test.sh: $RLOCK_MODULE is missing; building the module first" >&2
    make -C "$root" build
fi
cd "$root/jepsen"
unformatted="$(gofmt -l .)"
if [ -n "$unformatted" ]; then
    echo "jepsen/test.sh: not gofmt-formatted: $unformatted" >&2
    exit 1
fi
go vet ./...
go test -count=1 ./...
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
# An editable install follows clients/python as it changes: installed once.
.venv/bin/python -c 'import rlock, redis' 2>/dev/null ||
    .venv/bin/python -m pip install --quiet --disable-pip-version-check --editable ../clients/python
out="$root/target/jepsen"
for arg in "$@"; do
    [ "$arg" = -short ] && out="$out/short"
done
mkdir -p "$out"
go build -o "$out/jepsen" .
cc -O2 -Wall -shared -fPIC -o "$out/clockshift.so" clockshift/clockshift.c
exec "$out/jepsen" -out "$out" -module "$RLOCK_MODULE" -python .venv/bin/python -worker-py worker.py \
    -clockshift "$out/clockshift.so" "$@"
