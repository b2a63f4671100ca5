"""The shared behaviour specification (clients/spec): every scenario, run through rlock's public
API, blocking and asyncio. One test id per scenario and variant, `test_spec[asyncio-lock.x]`.
What the steps mean is clients/spec/README.md; this file is a table from op names to calls
(spec_ops.py) and the shared interpretation of expectations (here)."""

from __future__ import annotations

import asyncio
import itertools
import sys
import time
from pathlib import Path

import pytest
import redis
from redis._parsers.helpers import bool_ok

import spec_ops
from support import TaskWorker, ThreadWorker

SPEC = Path(__file__).resolve().parents[2] / "spec"
sys.path.insert(0, str(SPEC))
import check  # noqa: E402  (clients/spec/check.py: the schema and the README's rules)

#: The newest scenario-file version this runner reads (clients/spec/CONTRACT.md R1): a newer
#: file is refused, never run or skipped.
SCHEMA_VERSION = "1.0"
SCENARIOS = check.load(SPEC, supported=SCHEMA_VERSION)
#: Scenarios whose expectations are deliberately wrong (R2): each must FAIL here.
MUST_FAIL = check.load(SPEC / "valid-fail", supported=SCHEMA_VERSION)
SUPPORTED = {"blocking": {"confirmation", "drop_reply"}, "asyncio": {"cancel", "confirmation", "drop_reply"}}
#: Known drifts (clients/spec/README.md): (variant, scenario) -> what the helper does instead.
DRIFTS: dict = {}
AWAIT_DEFAULT_MS = 5000
JOIN_CAP_S = 30.0
users = itertools.count(1)


class StepFailed(AssertionError):
    pass


class CancellableTaskWorker(TaskWorker):
    """support.TaskWorker (one task per actor: the unit the asyncio types own by) whose current
    call can be cancelled from outside (`cancel`) without ending the worker."""

    stopping = False

    async def _serve(self):
        while True:
            call, future = await self.calls.get()
            try:
                future.set_result(await call())
            except asyncio.CancelledError as error:
                if self.stopping:
                    raise
                self.task.uncancel()
                future.set_exception(error)
            except Exception as error:
                future.set_exception(error)

    def cancel_current(self):
        self.task.cancel()

    def stop(self):
        self.stopping = True
        super().stop()


def drive(coroutine):
    """Runs an op's coroutine that never suspends (every call it awaits is blocking)."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value
    raise RuntimeError("a blocking op suspended")


class Actor:
    def __init__(self, run, name):
        self.name, self.user = name, f"spec-{next(users)}-{name}"
        self.owner = f"{self.user}:owner"
        self.client = run.variant.client(port=run.port, username=self.user, password="spec")
        self.module, self.handles, self.lost = run.variant.module, {}, {}
        self.blocking = run.variant.name == "blocking"
        self.worker = ThreadWorker() if self.blocking else CancellableTaskWorker()

    async def run(self, op):
        if self.blocking:
            return await self.worker.run(lambda: drive(op()))
        return await self.worker.run(op)


class Run:
    """One scenario being run."""

    def __init__(self, scenario, variant, admin, topology):
        self.scenario, self.variant, self.admin, self.topology = scenario, variant, admin, topology
        self.port = variant.port
        self.saved, self.background, self.actors, self.paused = {}, {}, {}, []

    async def start(self):
        self.admin.flushall()
        for name, value in self.scenario.get("server_config", {}).items():
            self.admin.config_set(name, value)
        for name in self.scenario.get("actors", []):
            actor = self.actors[name] = Actor(self, name)
            self.admin.execute_command("ACL", "SETUSER", actor.user, "reset", "on", ">spec", "~*", "&*", "+@all")

    async def finish(self):
        if self.paused:
            await self.op_resume_replicas(None)
        for name, (task, _, _) in self.background.items():
            task.cancel()
        for actor in self.actors.values():
            self.admin.execute_command("ACL", "SETUSER", actor.user, "off")
            self.admin.execute_command("CLIENT", "KILL", "USER", actor.user)
            actor.worker.stop()
            self.admin.execute_command("ACL", "DELUSER", actor.user)

    async def step(self, index, step):
        op, started = step["op"], time.monotonic()
        try:
            if "background" in step:
                task = asyncio.ensure_future(self.perform(step))
                self.background[step["background"]] = (task, step, started)
                return
            within_from = started
            if op in ("join", "cancel"):
                result, error, started = await self.end_background(step)
            else:
                result, error = await self.outcome(self.perform(step))
            self.check(step, result, error, started, within_from)
        except StepFailed as failure:
            raise StepFailed(f"step {index} ({op}): {failure}") from None

    async def end_background(self, step):
        """(result, error kind, when it started) of a background step, once it ended."""
        task, started_step, started = self.background.pop(step["name"])
        if step["op"] == "cancel":
            self.actors[started_step["actor"]].worker.cancel_current()
            await self.outcome(task)
            return None, None, started
        return (*await self.outcome(asyncio.wait_for(asyncio.shield(task), JOIN_CAP_S)), started)

    async def outcome(self, awaitable):
        """(result, error kind) of an op; an error that is no kind fails the step."""
        try:
            result = await awaitable
        except (asyncio.CancelledError, asyncio.TimeoutError) as error:
            return None, type(error).__name__
        except Exception as error:
            kind = spec_ops.kind_of(error)
            if kind is None:
                raise StepFailed(f"{type(error).__name__}: {error}") from error
            return None, kind
        if result is spec_ops.NOT_ACQUIRED:
            return None, "NotAcquired"
        return result, None

    def check(self, step, result, error, started, within_from):
        took_ms = (time.monotonic() - within_from) * 1000
        if error != step.get("error"):
            raise StepFailed(f"expected {step.get('error') or 'success'}, got {error or f'success ({result!r})'}")
        if "expect" in step and not self.matches(step["expect"], result):
            raise StepFailed(f"expected {step['expect']!r}, got {result!r}")
        if "within_ms" in step and took_ms > step["within_ms"]:
            raise StepFailed(f"took {took_ms:.0f} ms, more than {step['within_ms']} ms")
        waited_ms = (time.monotonic() - started) * 1000
        if "after_ms" in step and waited_ms < step["after_ms"]:
            raise StepFailed(f"ended after {waited_ms:.0f} ms, sooner than {step['after_ms']} ms")
        if "save" in step:
            self.saved[step["save"]] = result

    def value(self, expected):
        if isinstance(expected, str) and expected.startswith("$"):
            return self.saved[expected[1:]]
        return expected

    def matches(self, expected, actual) -> bool:
        compare = {"$gt": lambda a, b: a > b, "$gte": lambda a, b: a >= b, "$lt": lambda a, b: a < b,
                   "$lte": lambda a, b: a <= b, "$ne": lambda a, b: a != b, "$eq": lambda a, b: a == b}
        types = {"integer": int, "string": str, "array": list, "object": dict, "boolean": bool, "null": type(None)}
        if isinstance(expected, dict) and expected and all(key.startswith("$") for key in expected):
            for key, operand in expected.items():
                if key == "$type":
                    ok = isinstance(actual, types[operand]) and not (operand == "integer" and isinstance(actual, bool))
                elif key == "$len":
                    ok = isinstance(actual, list) and len(actual) == operand
                else:
                    ok = isinstance(actual, int) and compare[key](actual, self.value(operand))
                if not ok:
                    return False
            return True
        if isinstance(expected, dict):
            return isinstance(actual, dict) and all(
                key in actual and self.matches(value, actual[key]) for key, value in expected.items())
        if isinstance(expected, list):
            return isinstance(actual, list) and len(actual) == len(expected) and all(
                self.matches(e, a) for e, a in zip(expected, actual))
        return actual == self.value(expected) and type(actual) is type(self.value(expected))

    async def perform(self, step):
        op = step["op"]
        if op in spec_ops.ACTOR_OPS:
            actor = self.actors[step["actor"]]
            call = spec_ops.ACTOR_OPS[op]
            return await actor.run(lambda: call(actor, step))
        return await getattr(self, f"op_{op}")(step)

    # -- steps of the runner itself -----------------------------------------------------------

    async def op_admin(self, step):
        return self.admin.execute_command(*step["command"])

    async def op_sleep(self, step):
        await asyncio.sleep(step["ms"] / 1000)

    async def op_await_waiters(self, step):
        deadline = time.monotonic() + step.get("within_ms", AWAIT_DEFAULT_MS) / 1000
        while (count := spec_ops.waiters(self.admin, step)) != step["count"]:
            if time.monotonic() > deadline:
                raise StepFailed(f"{count} waiters, not {step['count']}")
            await asyncio.sleep(0.002)

    async def op_kill_connection(self, step):
        self.admin.execute_command("CLIENT", "KILL", "USER", self.actors[step["actor"]].user)

    async def op_drop_reply(self, step):
        """The command runs and the actor's connections close in one transaction, before any
        reply or message of what the command did reaches the actor (CONTRACT.md R3.1)."""
        pipe = self.admin.pipeline(transaction=True)
        pipe.execute_command(*step["command"])
        pipe.execute_command("CLIENT", "KILL", "USER", self.actors[step["actor"]].user)
        errors = [reply for reply in pipe.execute(raise_on_error=False) if isinstance(reply, Exception)]
        if errors:
            raise StepFailed(f"the drop's transaction failed: {errors}")

    async def op_crash(self, step):
        user = self.actors[step["actor"]].user
        self.admin.execute_command("ACL", "SETUSER", user, "off")
        self.admin.execute_command("CLIENT", "KILL", "USER", user)

    async def op_await_lost(self, step):
        actor = self.actors[step["actor"]]
        lost = actor.lost[spec_ops.handle_key(step)]
        deadline = time.monotonic() + step.get("within_ms", AWAIT_DEFAULT_MS) / 1000
        while not lost.is_set():
            if time.monotonic() > deadline:
                raise StepFailed("the holding was not reported lost")
            await asyncio.sleep(0.002)

    async def op_pause_replicas(self, step):
        self.paused = [replica["port"] for replica in self.topology.describe()["replicas"]]
        for port in self.paused:
            self.topology.pause(port)

    async def op_resume_replicas(self, step):
        for port in self.paused:
            self.topology.resume(port)
        self.paused = []


@pytest.fixture(scope="session")
def replicated(tmp_path_factory):
    sys.path.insert(0, str(SPEC.parent / "harness"))
    from topology import Topology

    topology = Topology.start("replicated", workdir=tmp_path_factory.mktemp("replicated"))
    yield topology
    topology.stop()


def scenario_id(entry):
    return f"{entry[0]}.{entry[1]['name']}"


@pytest.mark.parametrize("entry", SCENARIOS, ids=scenario_id)
async def test_spec(entry, variant, redis_server, request):
    name, scenario = scenario_id(entry), entry[1]
    missing = set(scenario.get("requires", [])) - SUPPORTED[variant.name]
    if missing:
        pytest.skip(f"{name}: the {variant.name} runner does not support {', '.join(sorted(missing))}")
    if (variant.name, name) in DRIFTS:
        request.applymarker(pytest.mark.xfail(reason=f"known drift: {DRIFTS[variant.name, name]}", strict=True))
    await run_scenario(scenario, variant, request)


@pytest.mark.parametrize("entry", MUST_FAIL, ids=scenario_id)
async def test_spec_valid_fail(entry, variant, redis_server, request):
    """A scenario with a deliberately wrong expectation fails its step: a runner that stopped
    comparing would pass it (CONTRACT.md R2)."""
    with pytest.raises(StepFailed):
        await run_scenario(entry[1], variant, request)


@pytest.mark.parametrize("file", sorted((SPEC / "invalid").glob("*.json")), ids=lambda f: f.name)
def test_spec_refuses_an_unreadable_version(file):
    """A file of a newer schemaVersion (or none) is refused loudly, not run and not skipped
    (CONTRACT.md R1)."""
    with pytest.raises(ValueError, match="refused: (no schemaVersion|schemaVersion .* is newer than 1.0)"):
        check.load_files([file], supported=SCHEMA_VERSION)


def test_spec_refuses_a_newer_schema():
    with pytest.raises(ValueError, match="newer-schema.json: refused: schemaVersion 2.0 is newer than 1.0"):
        check.load_files([SPEC / "invalid" / "newer-schema.json"], supported=SCHEMA_VERSION)


async def run_scenario(scenario, variant, request):
    topology = None
    if scenario.get("topology") == "replicated":
        topology = request.getfixturevalue("replicated")
        variant.port = topology.describe()["primary"]["port"]
    admin = redis.Redis(port=variant.port, protocol=3, decode_responses=True)
    # An admin reply of OK is "OK" (README, "Comparing"), not redis-py's True.
    for command in [name for name, callback in admin.response_callbacks.items() if callback is bool_ok]:
        del admin.response_callbacks[command]
    del admin.response_callbacks["SET"]  # parse_set_result: True for OK too
    run = Run(scenario, variant, admin, topology)
    try:
        await run.start()
        for index, step in enumerate(scenario["steps"]):
            await run.step(index, step)
    finally:
        await run.finish()
        admin.close()
