#!/usr/bin/env python3
"""Checks every scenario file in clients/spec against schema.json, and the rules a schema
cannot say (README.md): declared actors, saved names defined before use, background steps
ended by a join or cancel, an actor left alone while its background step runs, a handle's
lease and confirmation fixed by its first step.

    python3 clients/spec/check.py        # exit 1 and one line per problem

Runners import load() (Python) or run this file (other languages) before the scenarios, so a
malformed file fails loudly. Standard library only: a validator for the JSON Schema keywords
schema.json uses, nothing more.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCHEMA = json.loads((HERE / "schema.json").read_text())
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


def semantic_problems(scenario, path):
    """What the README requires beyond the schema."""
    problems, actors = [], set(scenario.get("actors", []))
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
        if actor is not None and busy and op not in ("kill_connection", "crash"):
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


def load(directory: Path = HERE):
    """[(file stem, scenario)] of every scenario file; raises ValueError listing every problem."""
    problems, scenarios = [], []
    for file in sorted(directory.glob("*.json")):
        if file.name == "schema.json":
            continue
        try:
            content = json.loads(file.read_text())
        except json.JSONDecodeError as error:
            problems.append(f"{file.name}: {error}")
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


if __name__ == "__main__":
    try:
        print(f"{len(load())} scenarios, all well-formed")
    except ValueError as error:
        sys.exit(str(error))
