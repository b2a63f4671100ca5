"""Logic written once for the blocking and the asyncio client: a plan is a generator that
yields each I/O step, `(function, *args)`, and is sent its result (or thrown its exception);
`PAUSE, seconds` waits. run_steps makes the calls and sleeps blocking; run_steps_async awaits
them (the asyncio client's functions are coroutine functions). A plan runs nested plans with
`yield from`."""

from __future__ import annotations

import asyncio
import time

PAUSE = object()


def run_steps(plan):
    """Runs `plan` to its end, blocking; returns what it returns."""
    try:
        step = next(plan)
        while True:
            try:
                result = time.sleep(step[1]) if step[0] is PAUSE else step[0](*step[1:])
            except BaseException as error:  # the plan's own except clauses decide
                step = plan.throw(error)
            else:
                step = plan.send(result)
    except StopIteration as finished:
        return finished.value


async def run_steps_async(plan):
    """Runs `plan` to its end, awaiting each step."""
    try:
        step = next(plan)
        while True:
            try:
                result = await (asyncio.sleep(step[1]) if step[0] is PAUSE else step[0](*step[1:]))
            except BaseException as error:  # a cancel too: the plan closes what it must
                step = plan.throw(error)
            else:
                step = plan.send(result)
    except StopIteration as finished:
        return finished.value
