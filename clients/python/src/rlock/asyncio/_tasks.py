"""Which task a call is made for. A waiting acquire runs in a task of its own (so that a
cancelled caller cannot interrupt a call on the wire), and so does the giving back of a grant
that raced a cancel; both act for the caller: its owner id, and its per-task state."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import weakref
from types import SimpleNamespace

from .._base import next_serial, thread_serial

_acting_for = contextvars.ContextVar("rlock_acting_for", default=None)
_task_serials = weakref.WeakKeyDictionary()
_task_serials_mutex = threading.Lock()  # one dictionary for the event loops of all threads


def current_unit():
    """The task the running code acts for (None outside a task)."""
    return _acting_for.get() or asyncio.current_task()


def spawn_for_caller(coroutine) -> asyncio.Task:
    """A task that acts for the current one."""
    context = contextvars.copy_context()
    context.run(_acting_for.set, current_unit())
    return context.run(asyncio.get_running_loop().create_task, coroutine)


def task_serial() -> int:
    """What a thread is to the blocking types, a task is here: the unit that re-enters its
    holding (and owns its permits)."""
    task = current_unit()
    if task is None:
        return thread_serial()
    with _task_serials_mutex:
        serial = _task_serials.get(task)
        if serial is None:
            serial = _task_serials[task] = next_serial()
        return serial


class TaskLocal:
    """Per-task state (``token``, ``holding``), as threading.local is per thread: what the
    asyncio Semaphore and ReadWriteLock keep, whose holdings are their task's. (The asyncio
    Lock keeps its state per thread, as redis-py's does.)"""

    def __init__(self):
        object.__setattr__(self, "_states", weakref.WeakKeyDictionary())
        object.__setattr__(self, "_outside", threading.local())  # code run outside any task

    def _state(self):
        task = current_unit()
        if task is None:
            state = getattr(self._outside, "state", None)
            if state is None:
                state = self._outside.state = SimpleNamespace(token=None, holding=None)
            return state
        state = self._states.get(task)
        if state is None:
            state = self._states[task] = SimpleNamespace(token=None, holding=None)
        return state

    def __getattr__(self, name):
        return getattr(self._state(), name)

    def __setattr__(self, name, value):
        setattr(self._state(), name, value)
