#!/usr/bin/env bash
# Runs the Rust client's tests (against real redis-server processes with the module loaded)
# from the workspace root. Extra arguments go to `cargo test`. Exit code: cargo's.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
export RLOCK_MODULE="${RLOCK_MODULE:-${CARGO_TARGET_DIR:-$root/target}/release/librlock.so}"
if [ ! -f "$RLOCK_MODULE" ]; then
    echo "test.sh: $RLOCK_MODULE is missing; building the module first" >&2
    make build
fi
exec cargo test --release -p rlock-client "$@"
