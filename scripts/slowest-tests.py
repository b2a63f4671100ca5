#!/usr/bin/env python3
"""The slowest tests of a suite's log, where its runner prints per-test times: pytest's
`--durations` table (test-suites.sh sets PYTEST_ADDOPTS for it), node:test's TAP
`duration_ms`, `go test -v`'s `--- PASS: TestX (1.23s)`, JUnit's console tree
(`✔ name 123 ms`), and for cargo, which prints no time per test, each test binary's
`finished in 1.23s`.

    slowest-tests.py LOG [N]    # the N (default 5) slowest, one per line: seconds and name
"""

from __future__ import annotations

import re
import sys


def timings(text: str) -> list[tuple[float, str]]:
    found: list[tuple[float, str]] = []
    # pytest --durations: "12.34s call     tests/test_x.py::test_y[param]"
    found += [(float(s), name) for s, name in re.findall(r"^(\d+\.\d+)s (?:call|setup|teardown)\s+(\S+)", text, re.M)]
    # node:test TAP: "# Subtest: name" ... "duration_ms: 123.4" (the first after it is its own)
    subtest = None
    for line in text.splitlines():
        named = re.match(r"\s*# Subtest: (.*)", line)
        if named:
            subtest = named.group(1)
            continue
        took = re.match(r"\s*duration_ms: ([\d.]+)", line)
        if took and subtest is not None:
            found.append((float(took.group(1)) / 1000, subtest))
            subtest = None
    # go test -v: "--- PASS: TestName (1.23s)"
    found += [(float(s), name) for name, s in re.findall(r"^\s*--- (?:PASS|FAIL): (\S+) \((\d+\.\d+)s\)", text, re.M)]
    # JUnit console launcher tree: "├─ name ✔ 123 ms" is not printed by default; its
    # "[...] name (123 ms)" details variant is: "✔ name (1234 ms)"
    found += [(int(ms) / 1000, name.strip()) for name, ms in re.findall(r"[✔✘] (.+?) \((\d+) ms\)", text)]
    # cargo: "Running tests/x.rs (...)" then "test result: ... finished in 1.23s"
    binary = None
    for line in text.splitlines():
        running = re.match(r"\s*Running (\S+)", line)
        if running:
            binary = running.group(1)
        finished = re.search(r"^test result: .* finished in ([\d.]+)s", line)
        if finished and binary:
            found.append((float(finished.group(1)), f"{binary} (the whole binary)"))
            binary = None
    return found


def main() -> None:
    log, count = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 5
    with open(log, encoding="utf-8", errors="replace") as file:
        slowest = sorted(timings(file.read()), reverse=True)[:count]
    for seconds, name in slowest:
        print(f"{seconds:8.1f}s  {name}")


if __name__ == "__main__":
    main()
