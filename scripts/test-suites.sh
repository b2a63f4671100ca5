#!/usr/bin/env bash
# Runs independent test suites side by side, TEST_JOBS at a time (default 3): most of a suite's
# time is spent waiting on servers (leases, timeouts, failovers), not on the CPU, so a 2-core
# machine runs three at once in about the time of the longest chain. Every suite starts its own
# servers on free ports, so none shares a port or a server with another.
#
# Usage: test-suites.sh name=command ...   (listed longest first: they start in that order)
# Each suite's output goes to target/test-logs/<name>.log. A suite's log is printed whole when it
# fails, its last lines when it passes. At the end: every suite's wall time, longest first, and
# the slowest tests of each where its runner prints them (scripts/slowest-tests.py; pytest's
# are asked for through PYTEST_ADDOPTS), then, for each failed suite, the lines of its log that
# name the failing tests (scripts/failed-tests.py). Exit code: non-zero when any suite failed.
set -uo pipefail
# Job control on: a non-interactive shell starts background jobs with SIGINT and SIGQUIT ignored,
# and a process inherits ignored signals, so every test process would ignore Ctrl-C (Python then
# never raises KeyboardInterrupt: a test of what Ctrl-C does to a waiting acquire hung that way).
# With it, each suite runs in a process group of its own, stopped with the script.
set -m

jobs="${TEST_JOBS:-3}"
logs="${TEST_LOGS:-target/test-logs}"
mkdir -p "$logs"

declare -A pid_of_name=() started_at=() took_of=()
failed=()
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
all_started=$(date +%s)
export PYTEST_ADDOPTS="${PYTEST_ADDOPTS:-} --durations=5"
trap 'for pid in "${pid_of_name[@]}"; do kill -- "-$pid" 2>/dev/null; done' EXIT

# Waits for any one running suite to end and reports it.
reap() {
  local done_pid name rc
  wait -n -p done_pid
  rc=$?
  for name in "${!pid_of_name[@]}"; do
    if [ "${pid_of_name[$name]}" = "$done_pid" ]; then
      unset "pid_of_name[$name]"
      local took=$(( $(date +%s) - started_at[$name] ))
      took_of[$name]=$took
      if [ "$rc" -eq 0 ]; then
        echo "== $name: passed in ${took}s (log: $logs/$name.log)"
        tail -n 5 "$logs/$name.log" | sed "s/^/   $name| /"
      else
        echo "== $name: FAILED (exit $rc) in ${took}s; its log:"
        sed "s/^/   $name| /" "$logs/$name.log"
        failed+=("$name")
      fi
      return
    fi
  done
}

for suite in "$@"; do
  name="${suite%%=*}"
  command="${suite#*=}"
  while [ "${#pid_of_name[@]}" -ge "$jobs" ]; do
    reap
  done
  echo "== $name: started ($command)"
  started_at[$name]=$(date +%s)
  bash -c "$command" >"$logs/$name.log" 2>&1 &
  pid_of_name[$name]=$!
done
while [ "${#pid_of_name[@]}" -gt 0 ]; do
  reap
done

echo "== wall time per suite, longest first (all: $(( $(date +%s) - all_started ))s, $jobs at a time)"
for name in "${!took_of[@]}"; do
  echo "${took_of[$name]} $name"
done | sort -rn | while read -r took name; do
  printf '   %5ss  %s\n' "$took" "$name"
  python3 "$here/slowest-tests.py" "$logs/$name.log" 5 | sed 's/^/            /'
done

if [ "${#failed[@]}" -gt 0 ]; then
  # Last, so that the end of the output names what failed (scripts/failed-tests.py).
  for name in "${failed[@]}"; do
    echo "== $name failed; what its log names as failing:"
    python3 "$here/failed-tests.py" "$logs/$name.log" 25 | sed "s/^/   $name| /"
  done
  echo "== failed: ${failed[*]}"
  exit 1
fi
echo "== every suite passed"
