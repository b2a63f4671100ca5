#!/usr/bin/env python3
"""Checks every scenario file in clients/spec against schema.json, and the rules a schema
cannot say (README.md): a schemaVersion this checker supports (CONTRACT.md R1), citations of
rules CONTRACT.md has, declared actors, saved names defined before use, background steps
ended by a join or cancel, an actor left alone while its background step runs, a handle's
lease and confirmation fixed by its first step.

    python3 clients/spec/check.py        # exit 1 and one line per problem

It checks the scenarios that must pass (`*.json`), those that must fail (`valid-fail/`, well
formed too), and that each file of `invalid/` is refused. Runners import load() (Python) or run
this file (other languages) before the scenarios, so a malformed file fails loudly; each runner
also refuses a newer schemaVersion on its own. Standard library only: a validator for the JSON
Schema keywords schema.json uses, nothing more.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCHEMA = json.loads((HERE / "schema.json").read_text())
#: The version of scenario files schema.json describes, the newest this checker reads.
SUPPORTED_VERSION = SCHEMA["schemaVersion"]
#: The rule ids of CONTRACT.md (`## C2 ...` sections, `**C2.1**` rules) a scenario may cite.
CONTRACT_IDS = set(re.findall(r"^## ([CR][0-9]+) ", (HERE / "CONTRACT.md").read_text(), re.M)) | set(
    re.findall(r"\*\*([CR][0-9]+\.[0-9]+)\*\*", (HERE / "CONTRACT.md").read_text())
)
TYPES = {"object": dict, "array": list, "string": str, "integer": int, "boolean": bool}
HANDLE_OPTIONS = ("lease_ms", "confirm")
#: The handle a step uses, by its type or op: a read-write lock's sides share one.
HANDLE_KINDS = {"lock": "lock", "read": "rwlock", "write": "rwlock", "semaphore": "semaphore",
                "set_permits": "semaphore", "add_permits": "semaphore", "available_permits": "semaphore"}


def validate(value, schema, path="$"):
    """Problems of `value` against `schema` (the keywords schema.json uses)."""
    if "$ref" in schema:
        schema = SCHEMA["$defs"][schema["$ref"].rsplit("/", 1)[1]]
    problems = []
    expected = TYPES.get(schema.get("type"))
    if expected and (not isinstance(value, expected) or (expected is int and isinstance(value, bool))):
        return [f"{path}: expected {schema['type']}, got {json.dumps(value)}"]
    if "enum" in schema and value not in schema["enum"]:
        problems.append(f"{path}: {json.dumps(value)} is not one of {schema['enum']}")
    if "const" in schema and value != schema["const"]:
        problems.append(f"{path}: expected {json.dumps(schema['const'])}")
    if "minimum" in schema and value < schema["minimum"]:
        problems.append(f"{path}: below {schema['minimum']}")
    if "pattern" in schema and not re.search(schema["pattern"], value):
        problems.append(f"{path}: {value!r} does not match {schema['pattern']}")
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            problems.append(f"{path}: fewer than {schema['minItems']} items")
        for index, item in enumerate(value):
            problems += validate(item, schema.get("items", {}), f"{path}[{index}]")
    if isinstance(value, dict):
        problems += [f"{path}: {name!r} is required" for name in schema.get("required", []) if name not in value]
        properties = schema.get("properties", {})
        for name, item in value.items():
            if name in properties:
                problems += validate(item, properties[name], f"{path}.{name}")
            elif schema.get("additionalProperties") is False:
                problems.append(f"{path}: unknown field {name!r}")
            elif isinstance(schema.get("additionalProperties"), dict):
                problems += validate(item, schema["additionalProperties"], f"{path}.{name}")
        for rule in schema.get("allOf", []):
            if not validate(value, rule["if"]):
                problems += validate(value, rule["then"], path)
    return problems


def version_problem(content, supported: str = SUPPORTED_VERSION):
    """Why a file's schemaVersion cannot be read by a runner supporting `supported`, or None."""
    version = content.get("schemaVersion") if isinstance(content, dict) else None
    if version is None:
        return "no schemaVersion"
    match = re.fullmatch(r"([0-9]+)\.([0-9]+)", version) if isinstance(version, str) else None
    if match is None:
        return f"schemaVersion {json.dumps(version)} is not <major>.<minor>"
    mine = tuple(int(part) for part in supported.split("."))
    if tuple(int(part) for part in match.groups()) > mine:
        return f"schemaVersion {version} is newer than {supported}, the newest this runner reads"
    return None


def semantic_problems(scenario, path):
    """What the README requires beyond the schema."""
    problems, actors = [], set(scenario.get("actors", []))
    problems += [f"{path}: cites {cite}, which CONTRACT.md has not" for cite in scenario.get("cites", [])
                 if cite not in CONTRACT_IDS]
    saved, running, handles = set(), {}, {}  # running: background name -> actor

    def refs(value):
        if isinstance(value, str) and value.startswith("$") and not value.startswith("$$"):
            yield value[1:]
        elif isinstance(value, dict):
            for item in value.values():
                yield from refs(item)
        elif isinstance(value, list):
            for item in value:
                yield from refs(item)

    for index, step in enumerate(scenario["steps"]):
        where, op, actor = f"{path}.steps[{index}] ({step['op']})", step["op"], step.get("actor")
        if actor is not None and actor not in actors:
            problems.append(f"{where}: actor {actor!r} is not declared")
        busy = {name for name, owner in running.items() if owner == actor}
        if actor is not None and busy and op not in ("kill_connection", "crash", "drop_reply"):
            problems.append(f"{where}: {actor} is busy with background step {sorted(busy)}")
        problems += [f"{where}: ${name} is not saved before" for name in refs(step.get("expect")) if name not in saved]
        if op in ("join", "cancel"):
            if running.pop(step["name"], None) is None:
                problems.append(f"{where}: no running background step {step['name']!r}")
        kind = HANDLE_KINDS.get(step.get("type")) or HANDLE_KINDS.get(op)
        if kind and "key" in step and actor is not None:
            made = (actor, kind, step["key"])
            if made not in handles:
                handles[made] = {option: step.get(option) for option in HANDLE_OPTIONS}
            for option in HANDLE_OPTIONS:
                if option in step and handles[made][option] != step[option]:
                    problems.append(f"{where}: {option} differs from what its handle was made with")
        if "background" in step:
            problems += [f"{where}: a background step's {name} belongs on its join"
                         for name in ("expect", "error", "save", "within_ms", "after_ms") if name in step]
            if step["background"] in running:
                problems.append(f"{where}: background {step['background']!r} is running already")
            running[step["background"]] = actor
        if "save" in step:
            saved.add(step["save"])
    problems += [f"{path}: background {name!r} is never joined or cancelled" for name in running]
    return problems


def load(directory: Path = HERE, supported: str = SUPPORTED_VERSION):
    """[(file stem, scenario)] of every scenario file of `directory` (the top level: those that
    must pass; `valid-fail/`: those that must fail); raises ValueError listing every problem,
    a file whose schemaVersion is newer than `supported` among them."""
    return load_files(sorted(f for f in directory.glob("*.json") if f.name != "schema.json"), supported)


def load_files(files, supported: str = SUPPORTED_VERSION):
    """[(file stem, scenario)] of `files`; raises ValueError listing every problem."""
    problems, scenarios = [], []
    for file in files:
        try:
            content = json.loads(file.read_text())
        except json.JSONDecodeError as error:
            problems.append(f"{file.name}: {error}")
            continue
        refused = version_problem(content, supported)
        if refused:
            problems.append(f"{file.name}: refused: {refused}")
            continue
        found = validate(content, SCHEMA, file.name)
        problems += found
        if found:
            continue
        names = [scenario["name"] for scenario in content["scenarios"]]
        problems += [f"{file.name}: {name!r} twice" for name in set(names) if names.count(name) > 1]
        for index, scenario in enumerate(content["scenarios"]):
            problems += semantic_problems(scenario, f"{file.name}:{scenario['name']}")
            scenarios.append((file.stem, scenario))
    if problems:
        raise ValueError("clients/spec is malformed:\n" + "\n".join(problems))
    return scenarios


def refused_files():
    """Problems of `invalid/`: each of its files must be refused by load_files."""
    problems = []
    for file in sorted((HERE / "invalid").glob("*.json")):
        try:
            load_files([file])
            problems.append(f"invalid/{file.name}: accepted, but it must be refused")
        except ValueError:
            pass
    return problems


if __name__ == "__main__":
    try:
        passing, failing = load(), load(HERE / "valid-fail")
    except ValueError as error:
        sys.exit(str(error))
    if refused_files():
        sys.exit("\n".join(refused_files()))
    print(f"{len(passing)} scenarios and {len(failing)} that must fail, all well-formed; invalid/ refused")
