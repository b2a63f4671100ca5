#!/usr/bin/env bash
# The Node client's tests: installs its npm dev dependencies when missing (package-lock.json),
# checks formatting and strict types (`npm run lint`), then `npm test` (compiles the
# TypeScript, runs node --test against real redis-server processes with the module at
# target/release/librlock.so; RLOCK_MODULE overrides it), then the vendored suites of the
# libraries we replace (upstream/), each under a time limit.
set -euo pipefail
cd "$(dirname "$0")"
if [ ! -d node_modules ]; then
  npm ci --no-audit --no-fund
fi
# The formatter (prettier, pinned) and the strict type checks, before anything runs.
npm run --silent lint
npm test
# redlock's own ava suite against our Redlock (upstream/redlock/README.md): unmodified (its
# layout failures checked by name), then our adapted copy; ~25 s. The vendored tests compile
# unchecked (ioredis 4 types), our launcher and checks are type-checked.
npx tsc -p upstream/redlock/tsconfig.check.json
npx tsc -p upstream/redlock
timeout --kill-after=10 240 node dist/upstream/redlock/run.js
# redis-semaphore's own mocha suite (upstream/redis-semaphore/README.md); ends itself after 3 min.
timeout --kill-after=10 240 npm run --silent test:redis-semaphore
