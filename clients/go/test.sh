#!/usr/bin/env bash
# Runs the Go package's checks and tests (against real redis-server processes with the module
# loaded): gofmt, go vet, go test. Standard library only, so nothing is ever downloaded.
# Extra arguments go to `go test` (e.g. -run Mutex -v, or -short to skip the topologies).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
export RLOCK_MODULE="${RLOCK_MODULE:-${CARGO_TARGET_DIR:-$root/target}/release/librlock.so}"
export GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local
if [ ! -f "$RLOCK_MODULE" ]; then
    echo "test.sh: $RLOCK_MODULE is missing; building the module first" >&2
    make -C "$root" build
fi
cd "$root/clients/go"
unformatted="$(gofmt -l .)"
if [ -n "$unformatted" ]; then
    echo "test.sh: not gofmt-formatted: $unformatted" >&2
    exit 1
fi
go vet ./...
exec go test -count=1 "$@" ./...
