"""Logic written once for the blocking and the asyncio client, as a generator (a flow): each
I/O step is a call on an object of the client's kind, whose result the `yield` hands back. A
blocking call has run when it is yielded: drive() hands its result straight back (its error was
raised where it was called). An asyncio call is a coroutine: drive_async() awaits it and sends
the result, or throws the error, into the flow. A flow runs another with `yield from`.

Used by the waiting flow (_waiting.py), a Session's calls and re-binding (_session.py), a
cluster key's routing (_router.py) and a release (_base.py)."""

from __future__ import annotations


def drive(flow):
    """Runs a flow of blocking steps: each step's result is what it yielded."""
    try:
        step = next(flow)
        while True:
            step = flow.send(step)
    except StopIteration as done:
        return done.value


async def drive_async(flow):
    """Runs a flow of asyncio steps, awaiting each one it yields."""
    value, error = None, None
    while True:
        try:
            step = flow.send(value) if error is None else flow.throw(error)
        except StopIteration as done:
            return done.value
        try:
            value, error = await step, None
        except BaseException as raised:  # handed to the flow, which may handle it
            value, error = None, raised
