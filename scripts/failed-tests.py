#!/usr/bin/env python3
"""The lines of a failed suite's log that name what failed, for the end of test-suites.sh's
output: a CI that shows only the last lines of a long run still says which test failed and why
(session 14's CI showed "== failed: java" and nothing of the Java log above it).

Matched: Maven Surefire's `[ERROR] Tests run: ... FAILURE!`, `[ERROR]   Class.method:12 message`
and `<<< FAIL`/`<<< ERROR` lines; pytest's `FAILED path::test - reason` and `ERROR ...`; go's
`--- FAIL:` and `FAIL\tpackage`; node:test's `not ok N - name`; cargo's `test name ... FAILED`,
`panicked at` and `---- name stdout ----`; PHPUnit's `N) Class::method`; and any line with
`AssertionError` or `Expect`-style failure words.

    failed-tests.py LOG [N]    # at most N (default 25) such lines, in the log's order
"""

from __future__ import annotations

import re
import sys

FAILURE_LINE = re.compile(
    r"<<< (?:FAIL|ERROR)"  # Surefire, per test
    r"|^\[ERROR\] (?:Tests run:|  \S+[.:]\S+|Failures:|Errors:)"  # Surefire's summary
    r"|^(?:FAILED|ERROR) \S+"  # pytest's short summary
    r"|^\s*--- FAIL: |^FAIL\s"  # go test
    r"|^\s*not ok \d+"  # node:test TAP
    r"|^test \S+ \.\.\. FAILED|panicked at|^---- \S+ stdout ----"  # cargo
    r"|^\d+\) \S+::\S+"  # PHPUnit
    r"|AssertionError|AssertionFailedError|expected:? .* but (?:was|got)"
)


def failure_lines(text: str, limit: int) -> list[str]:
    found = [line.rstrip() for line in text.splitlines() if FAILURE_LINE.search(line)]
    return found[:limit]


def main() -> None:
    log, limit = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 25
    with open(log, encoding="utf-8", errors="replace") as file:
        for line in failure_lines(file.read(), limit):
            print(line[:300])


if __name__ == "__main__":
    main()
