"""docs/frameworks.md shows each one-line switch as the tests run it: every switch of its table,
and every line of its Python examples that names rlock's frameworks code, is a line of the
tests' sources."""

import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
DOC = HERE.parents[2] / "docs" / "frameworks.md"
NAMES_OURS = re.compile(r"rlock\.contrib|rlock\.redis_lock|UniqueTask")


def lines_of_the_tests() -> set:
    sources = [*HERE.glob("*.py"), *HERE.glob("django_site/*.py")]
    return {line.strip() for path in sources for line in path.read_text().splitlines()}


def documented_switches(text: str) -> list:
    switches = []
    for row in re.findall(r"^\|[^|\n]+\|([^|\n]+)\|", text, flags=re.M):
        switches += re.findall(r"`([^`]+)`", row)
    for block in re.findall(r"```python\n(.*?)```", text, flags=re.S):
        # the code of each line, without its comment
        switches += [line.split("  #")[0].strip() for line in block.splitlines() if NAMES_OURS.search(line)]
    return switches


def test_every_documented_switch_is_a_tested_line():
    switches = documented_switches(DOC.read_text())
    assert len(switches) >= 8, switches
    lines = lines_of_the_tests()
    missing = [switch for switch in switches if not any(switch in line for line in lines)]
    assert missing == [], f"docs/frameworks.md shows lines no test runs: {missing}"
