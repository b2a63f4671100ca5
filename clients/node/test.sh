#!/usr/bin/env bash
# The Node client's tests: installs its npm dev dependencies when missing (package-lock.json),
# then `npm test` (compiles the TypeScript, runs node --test against real redis-server
# processes with the module at target/release/librlock.so; RLOCK_MODULE overrides it).
set -euo pipefail
cd "$(dirname "$0")"
if [ ! -d node_modules ]; then
  npm ci --no-audit --no-fund
fi
npm test
