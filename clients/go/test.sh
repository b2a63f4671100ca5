#!/usr/bin/env bash
# Runs the Go package's checks and tests (against real redis-server processes with the module
# loaded): gofmt, go vet, staticcheck (pinned, from the Go module proxy), go test -race.
# Extra arguments go to `go test` (e.g. -run Mutex -v, or -short to skip the topologies).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
# A Go new enough (the preinstalled 1.26; Debian's golang-go 1.19 is too old for go-redis v9
# and only ever bootstraps the download of the pinned toolchain): see go-toolchain.sh.
PATH="$("$root/clients/go/go-toolchain.sh"):$PATH"
export PATH GOTOOLCHAIN=local
export RLOCK_MODULE="${RLOCK_MODULE:-${CARGO_TARGET_DIR:-$root/target}/release/librlock.so}"
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
go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
exec go test -race -count=1 "$@" ./...
