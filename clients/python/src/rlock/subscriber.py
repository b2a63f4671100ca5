"""The one connection the blocking client's waits are told on (docs/notify.md).

A blocking acquire() does not block a connection of its own in the server's queue: it sends
``<TYPE>.ACQUIRE ... WAIT ms NOTIFY <client-id>`` on one of rlock's connections, which answers
at once (the token, or ``WAITING``), and the outcome comes later as a message on the channel of
one subscriber connection per client and process, shared by every waiting thread. The waiting
thread sleeps on a future; the subscriber's reader thread reads the messages and hands each to
its waiter (or marks the holding it is about lost).

The subscriber speaks RESP2 whatever the client does (a subscribed RESP2 connection runs
nothing but PING, and nothing else is sent on it), asks ``RLOCK.CHANNEL`` for its channel, and
PINGs every third of ``rlock.watchdog-idle-ms``: a watchdog grant told to it is bound to it. When
it closes, the server has dropped the waits told to it: their calls are sent again, with their
request IDs, through a new subscriber (_waiting.py; ConnectionError only when that keeps
failing), and the watchdog bindings on it are re-bound from a new connection or reported lost.
"""

from __future__ import annotations

import _thread
import concurrent.futures
import logging
import math
import select
import threading
import time

from redis.exceptions import ConnectionError, ResponseError

from ._commands import READ_GRACE_S
from ._dispatcher import Dispatcher
from ._notify import NotifyUnavailable, check_subscribed, is_message, word

__all__ = ["NotifyUnavailable", "Subscriber"]

logger = logging.getLogger("rlock")


class Subscriber(Dispatcher):
    def __init__(self, session, connection):
        super().__init__()
        self.session = session
        self.connection = connection
        self.channel = None
        self._reader = None

    @classmethod
    def open(cls, session, connection) -> "Subscriber":
        subscriber = cls(session, connection)
        try:
            subscriber._start()
        except BaseException as error:
            connection.disconnect()
            if isinstance(error, ResponseError):
                raise NotifyUnavailable(str(error)) from error
            raise
        return subscriber

    def _execute(self, *args):
        self.connection.send_command(*args, check_health=False)
        return self.connection.read_response()

    def _start(self) -> None:
        self.client_id = int(self._execute("CLIENT", "ID"))
        self.channel = word(self._execute("RLOCK.CHANNEL"))
        confirmation = self._execute("SUBSCRIBE", self.channel)
        check_subscribed(confirmation)
        interval = self.session.keepalive_interval()
        self._reader = threading.Thread(target=self._read, args=(interval,), name="rlock-subscriber", daemon=True)
        self._reader.start()

    def close(self) -> None:
        self.end(ConnectionError("rlock: the subscriber connection was closed"), rebind=False)

    # -- the reader thread ----------------------------------------------------------------------

    def _read(self, interval: float) -> None:
        """Reads messages (and PINGs when quiet: Listener) until the subscriber ends."""
        listener = Listener(self.connection, interval)
        try:
            while self.error is None:
                frame = listener.read()
                if is_message(frame) and word(frame[1]) == self.channel:
                    self.deliver(frame[2])
        except BaseException as error:
            self.end(error, rebind=True)
        finally:
            self.connection.disconnect()

    # -- Dispatcher's hooks -----------------------------------------------------------------------

    def _new_future(self):
        return Outcome()

    def _report(self, holding) -> None:
        threading.Thread(target=holding.lock._report_lost, args=(holding,), name="rlock-lost", daemon=True).start()

    def _rebind(self, binding) -> None:
        threading.Thread(target=binding.lock._session.rebind_elsewhere, args=(binding,), name="rlock-rebind", daemon=True).start()

    def _ended(self) -> None:
        self.session.subscriber_closed(self)
        if threading.current_thread() is not self._reader:
            self.connection.disconnect()  # wakes the reader thread, which ends


class Outcome:
    """What a wait's future is to the blocking client: the part of concurrent.futures.Future it
    uses (done, result, set_result, set_exception, add_done_callback), on one lock that its
    result releases. A Future's Condition cost every handoff of a hot lock several of the
    microseconds that its process spends on it under one GIL (issue 46)."""

    __slots__ = ("_ready", "_mutex", "_done", "_value", "_error", "_callbacks")

    def __init__(self):
        self._ready = _thread.allocate_lock()
        self._ready.acquire()  # released once, by the result
        self._mutex = _thread.allocate_lock()
        self._done = False
        self._value = self._error = None
        self._callbacks = None

    def done(self) -> bool:
        return self._done

    def result(self, timeout=None):
        """The result (or raises the error) once there is one; concurrent.futures.TimeoutError
        when none came within `timeout` seconds."""
        if not self._done:
            if not self._ready.acquire(True, -1 if timeout is None else timeout):
                raise concurrent.futures.TimeoutError()
            self._ready.release()  # for the next caller
        if self._error is not None:
            raise self._error
        return self._value

    def set_result(self, value) -> None:
        self._finish(value, None)

    def set_exception(self, error: BaseException) -> None:
        self._finish(None, error)

    def add_done_callback(self, callback) -> None:
        with self._mutex:
            if not self._done:
                self._callbacks = (self._callbacks or []) + [callback]
                return
        callback(self)

    def _finish(self, value, error) -> None:
        with self._mutex:
            if self._done:
                raise concurrent.futures.InvalidStateError("rlock: this wait has its outcome already")
            self._value, self._error, self._done = value, error, True
            callbacks, self._callbacks = self._callbacks, None
        self._ready.release()
        for callback in callbacks or ():
            try:
                callback(self)
            except Exception:
                logger.exception("rlock: a wait's callback failed")


class Listener:
    """The reading side of a subscribed RESP2 connection (a subscriber's, an election
    observer's): PINGs when nothing was sent for `interval` (a third of
    rlock.watchdog-idle-ms: the server renews a watchdog binding only for a connection that
    speaks). A PING left unanswered for three intervals means a connection gone without a
    word (no FIN)."""

    def __init__(self, connection, interval: float):
        self.connection, self.interval = connection, interval
        self.patience = max(3 * interval, READ_GRACE_S)
        self.last_sent, self.pinged_at = time.monotonic(), None
        sock = getattr(connection, "_sock", None)
        self._poll = None
        if sock is not None and hasattr(select, "poll"):
            self._poll = select.poll()
            self._poll.register(sock, select.POLLIN | select.POLLPRI)

    def _readable(self, timeout: float) -> bool:
        """connection.can_read(timeout), without its two socket.settimeout calls (four system
        calls a message, on a hot lock's handoff path): the parser's buffer first, then a poll
        on the socket. Other parsers (hiredis) go through can_read."""
        unread = getattr(getattr(self.connection._parser, "_buffer", None), "unread_bytes", None)
        if self._poll is None or unread is None:
            return self.connection.can_read(timeout=timeout)
        return bool(unread() or self._poll.poll(math.ceil(timeout * 1000)))

    def read(self):
        """The next frame other than a PONG; None when none came before a PING was due (the
        caller may look at its own state in between). Raises ConnectionError once the
        connection closed, or did not answer a PING."""
        now = time.monotonic()
        if self.pinged_at is None and now - self.last_sent >= self.interval:
            self.connection.send_command("PING", check_health=False)
            self.last_sent = self.pinged_at = now
            return None
        if self.pinged_at is not None and now - self.pinged_at > self.patience:
            raise ConnectionError(f"rlock: the subscriber did not answer PING within {self.patience} s")
        quiet_until = self.pinged_at + self.patience if self.pinged_at is not None else self.last_sent + self.interval
        if not self.connection.is_connected:  # redis-py would quietly connect a new socket
            raise ConnectionError("rlock: the subscriber connection closed")
        if not self._readable(max(0.0, quiet_until - now)):
            return None
        frame = self.connection.read_response()
        if isinstance(frame, list) and frame and word(frame[0]).lower() == b"pong":
            self.pinged_at = None
            return None
        return frame
