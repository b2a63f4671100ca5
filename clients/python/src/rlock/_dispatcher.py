"""The Dispatcher: routes the ``__rlock__:<id>`` messages (granted, timeout, failed, lost) read
on one subscriber connection to the wait or the holding they are for, whoever does the I/O (a
thread of the blocking client, a task of the asyncio one: subscriber.py, asyncio/subscriber.py).
The messages themselves are read in _notify.py.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from typing import Optional

from redis.exceptions import ConnectionError

from ._notify import GRANTED, LATCH_TYPE, LOST, TIMEOUT, Message, parse_message

logger = logging.getLogger("rlock")

#: `lost` notices kept for holdings not adopted yet.
MAX_UNCLAIMED = 256

#: A latch's `timeout` message ends the wait with the earliest deadline, if that deadline has
#: come within this many seconds (the server's timer and the client's clock agree to within ms).
LATCH_TIMEOUT_SLACK_S = 0.5


class Wait:
    """One queue entry told to a subscriber: its future (asyncio's or concurrent.futures') gets
    the message that ends it, or the subscriber's ConnectionError."""

    def __init__(self, dispatch: "Dispatcher", subject: tuple, future, deadline: Optional[float]):
        self.dispatch, self.subject, self.future = dispatch, subject, future
        self.deadline = deadline  # monotonic; math.inf: none; for a latch's `timeout` message

    def message(self) -> Optional[Message]:
        """The message that ended the wait, if one came (raises the subscriber's error if it
        closed first)."""
        return self.future.result() if self.future.done() else None

    def drop(self) -> None:
        self.dispatch._drop(self)


class Dispatcher:
    """What one subscriber connection knows, whoever does its I/O (a thread of the blocking
    client, a task of the asyncio one): the waits told to it, filed by (type, key, owner) in the
    order they were sent, the holdings granted through it (whose `lost` notices come to it) and
    the bindings of those whose watchdog connection it is. A subclass reads the messages and
    hands each to deliver()."""

    def __init__(self):
        self.client_id: Optional[int] = None  # the connection's, which NOTIFY names
        self.error: Optional[ConnectionError] = None  # set when it closed
        self._mutex = threading.Lock()  # the blocking client's reader and waiting threads
        self._waits = {}  # (type, key, owner) -> deque of Wait, in the order they were sent
        self._holdings = {}  # (type, key, owner) -> Holding
        self._bound = {}  # Binding -> None: the bindings on this connection, in order
        # `lost` notices that came before their holding was adopted (its grant and its loss
        # read in one go): (type, key, owner) -> token, the latest few.
        self._unclaimed = collections.OrderedDict()

    # Overridden by each subscriber.
    def _new_future(self):
        raise NotImplementedError

    def _report(self, holding) -> None:
        """Reports a holding lost, in the background."""
        raise NotImplementedError

    def _rebind(self, binding) -> None:
        """Re-binds a binding from a new connection (or reports it lost), in the background."""
        raise NotImplementedError

    def _ended(self) -> None:
        """Called once, when end() found it open: tell the client, close the connection."""
        raise NotImplementedError

    @property
    def idle(self) -> bool:
        """Nothing waits on it and no live holding is bound to it."""
        return not self._waits and not any(binding.live for binding in self._bound)

    def end(self, error: BaseException, rebind: bool) -> None:
        """It is closed (or found broken): every wait on it fails with one clear
        ConnectionError; with `rebind`, the watchdog bindings on it are re-bound elsewhere or
        reported lost."""
        with self._mutex:
            if self.error is not None:
                return
            if not (isinstance(error, ConnectionError) and str(error).startswith("rlock:")):
                error = ConnectionError(
                    f"rlock: the subscriber connection (client {self.client_id}) closed,"
                    f" and the server dropped the waits told to it: {error or type(error).__name__}"
                )
            self.error = error
            waits, self._waits = self._waits, {}
            bound, self._bound = self._bound, {}
            self._holdings = {}
        self._ended()
        for queue in waits.values():
            for wait in queue:
                if not wait.future.done():
                    wait.future.set_exception(error)
        if rebind:
            for binding in bound:
                if binding.live:
                    self._rebind(binding)

    # -- waits ----------------------------------------------------------------------------------

    def expect(self, subject: tuple, deadline: Optional[float] = None) -> Wait:
        """Files a wait for the message about `subject` before the call that queues it is sent
        (the message may overtake its reply on another connection)."""
        with self._mutex:
            if self.error is not None:
                raise self.error
            wait = Wait(self, subject, self._new_future(), deadline)
            self._waits.setdefault(subject, collections.deque()).append(wait)
            return wait

    def _drop(self, wait: Wait) -> None:
        with self._mutex:
            queue = self._waits.get(wait.subject)
            if queue is None:
                return
            try:
                queue.remove(wait)
            except ValueError:
                pass
            if not queue:
                del self._waits[wait.subject]

    def deliver(self, data) -> None:
        """One message read from the channel."""
        try:
            message = parse_message(data)
        except ValueError as error:
            logger.warning("rlock: %s", error)
            return
        if message.event == LOST:
            self._lost(message)
            return
        with self._mutex:
            ended = self._ended_waits(message)
        for wait in ended:
            wait.future.set_result(message)
        if not ended:
            logger.debug("rlock: a %s message for %r that nobody waits for", message.event, message.key)

    def _ended_waits(self, message: Message) -> list:
        """The waits a message ends, taken off the file: the first live one of its subject; for
        a latch, every one when it opened, the one whose deadline came when it timed out."""
        queue = self._waits.get(message.subject)
        if not queue:
            return []
        live = [wait for wait in queue if not wait.future.done()]
        if message.type == LATCH_TYPE and message.event == GRANTED:
            ended = live
        elif message.type == LATCH_TYPE and message.event == TIMEOUT:
            first = min(live, key=lambda wait: wait.deadline, default=None)
            due = first is not None and first.deadline <= time.monotonic() + LATCH_TIMEOUT_SLACK_S
            ended = [first] if due else []
        else:
            ended = live[:1]
        for wait in ended:
            queue.remove(wait)
        if not queue:
            del self._waits[message.subject]
        return ended

    # -- holdings -------------------------------------------------------------------------------

    def adopt(self, holding, subject: tuple, binding=None) -> None:
        """A holding granted with NOTIFY to this subscriber: its `lost` notice comes here; with
        `binding` (the holding's, new), its watchdog binding is this connection's, and is
        re-bound if it closes."""
        holding.subscriber = self
        if binding is not None:
            binding.bound = True
        with self._mutex:
            closed = self.error is not None
            if not closed:
                lost_token = self._unclaimed.pop(subject, None)
                if lost_token != holding.fence:
                    self._holdings[subject] = holding
                    if binding is not None:
                        self._bound[binding] = None
                    return
        if closed:
            if binding is not None and holding.live:
                self._rebind(binding)
            return
        self.lose(holding)

    def forget(self, holding) -> None:
        """The holding ended by its owner's release: no notice to wait for."""
        with self._mutex:
            for subject, known in list(self._holdings.items()):
                if known is holding:
                    del self._holdings[subject]
            if not holding.binding.live:
                self._bound.pop(holding.binding, None)

    def lose(self, holding) -> None:
        """The server says the holding ended: report it once, as a keeper would."""
        self.forget(holding)
        if holding.live:
            holding.lost = True
            self._report(holding)

    def _lost(self, message: Message) -> None:
        with self._mutex:
            holding = self._holdings.get(message.subject)
            if holding is None:  # not adopted yet, or long forgotten
                self._unclaimed[message.subject] = message.value
                self._unclaimed.move_to_end(message.subject)
                while len(self._unclaimed) > MAX_UNCLAIMED:
                    self._unclaimed.popitem(last=False)
                return
        if holding.fence == message.value:  # else an older holding's notice
            self.lose(holding)
