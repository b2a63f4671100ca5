"""The one connection the blocking client's waits are told on (docs/notify.md).

A blocking acquire() does not block a connection of its own in the server's queue: it sends
``<TYPE>.ACQUIRE ... WAIT ms NOTIFY <client-id>`` on one of rlock's connections, which answers
at once (the token, or ``WAITING``), and the outcome comes later as a message on the channel of
one subscriber connection per client and process, shared by every waiting thread. The
connection is read by one thread at a time, the one whose reading turn it is: a waiting thread
(the one asleep longest: next in line when they wait for one key, as a hot lock's do), which so
reads its own grant instead of being woken by another thread, or the subscriber's reader
thread, while nobody waits. Whoever reads hands each message to its waiter (or marks the
holding it is about lost). A thread that is told its outcome, or stops waiting, passes the
turn to the waiting thread asleep longest; with none, the turn is nobody's: the next thread
that waits takes it (a hot lock's, told its grant, waits again within milliseconds), else the
reader thread after DOZE_S.

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

#: The reader thread's turn to read the subscriber (Subscriber._turn).
READER = "reader"

#: How long the reading turn stays nobody's before the reader thread takes it: a hot lock's
#: waiting thread, told its grant, waits again within a few ms and takes it back.
DOZE_S = 0.05

#: How often the reader thread looks whether the turn is nobody's, while a waiting thread has
#: it (a hot lock's threads keep it for seconds, and every look costs a wake-up under the GIL):
#: a message nobody waits for is read at most LOOK_S + DOZE_S late.
LOOK_S = 0.25


class Subscriber(Dispatcher):
    def __init__(self, session, connection):
        super().__init__()
        self.session = session
        self.connection = connection
        self.channel = None
        self._reader = None
        self._listener = None
        # The reading turn (docs above): READER (the reader thread's), the Outcome whose waiting
        # thread reads the connection now, or None (nobody's, since _free_since). Changed under
        # _mutex: given by the thread that has it, taken when it is nobody's.
        self._turn = READER
        self._free_since = 0.0
        self._asleep = {}  # Outcome -> None: the waiting threads asleep on their outcome, oldest first
        self._reader_turn = _thread.allocate_lock()  # released to end the reader thread's doze
        self._reader_turn.acquire()
        self._reader_woken = False

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
        self._listener = Listener(self.connection, interval)
        # Nobody reads for at most half a PING interval: PINGs stay within the server's bound.
        self._doze, self._look = min(DOZE_S, interval / 4), min(LOOK_S, interval / 4)
        self._reader = threading.Thread(target=self._read, name="rlock-subscriber", daemon=True)
        self._reader.start()

    def close(self) -> None:
        self.end(ConnectionError("rlock: the subscriber connection was closed"), rebind=False)

    # -- reading, in turns ------------------------------------------------------------------------

    def _read(self) -> None:
        """The reader thread: reads messages (and PINGs when quiet: Listener) until the
        subscriber ends, in its turns. It takes the turn when nobody has had it for DOZE_S;
        after a message it lets it go (the thread it told may wait again at once, and take it),
        to the waiting thread asleep longest if there is one."""
        try:
            while self.error is None:
                with self._mutex:
                    turn = self._turn
                    dozed = time.monotonic() - self._free_since
                    if turn is None and dozed >= self._doze:
                        self._turn = turn = READER
                if turn is not READER:  # a waiting thread reads, or may take it
                    self._reader_turn.acquire(True, self._doze - dozed if turn is None else self._look)
                    with self._mutex:
                        self._reader_woken = False
                    continue
                frame = self._listener.read()
                self._take(frame)
                if frame is not None or self._asleep:
                    with self._mutex:
                        self._pass_turn()
        except BaseException as error:
            self.end(error, rebind=True)
        finally:
            self.connection.disconnect()

    def _take(self, frame) -> None:
        if is_message(frame) and word(frame[1]) == self.channel:
            self.deliver(frame[2])

    def _pass_turn(self) -> None:
        """Under _mutex, by the thread whose turn it is: the turn goes to the waiting thread
        asleep longest, else nobody has it (a thread that comes to wait takes it; the reader
        thread does after DOZE_S)."""
        for outcome in self._asleep:
            if not outcome._done:
                self._turn = outcome
                outcome._wake()
                return
        self._turn, self._free_since = None, time.monotonic()

    def _wake_reader(self) -> None:
        if not self._reader_woken:
            self._reader_woken = True
            self._reader_turn.release()

    def _await(self, outcome: "Outcome", timeout: float) -> None:
        """A waiting thread's wait for its outcome, up to `timeout` seconds: asleep until it
        comes, or until the reading turn does (at once if nobody has it); then it reads until
        its outcome comes (it may be its own grant: no thread woke it). It passes the turn on
        when it stops waiting."""
        until = time.monotonic() + timeout
        with self._mutex:
            self._asleep[outcome] = None
            if self._turn is None:
                self._turn = outcome
        try:
            while not outcome._done:
                if self._turn is outcome:
                    self._read_for(outcome, until)
                    if not outcome._done:
                        return  # timed out
                    break
                left = until - time.monotonic()
                if left <= 0 or not outcome._sleep(left):
                    return
        finally:
            with self._mutex:
                self._asleep.pop(outcome, None)
                if self._turn is outcome:
                    self._pass_turn()

    def _read_for(self, outcome: "Outcome", until: float) -> None:
        """Reads in a waiting thread's turn, until its outcome came or `until`. A read that
        fails ends the subscriber (every wait on it fails with its ConnectionError, this one's
        too, or that error is raised); an interrupt (KeyboardInterrupt) is raised after that,
        the connection being in an unknown state mid-reply."""
        try:
            while not outcome._done:
                left = until - time.monotonic()
                if left <= 0:
                    return
                self._take(self._listener.read(left))
        except BaseException as error:
            self.end(error, rebind=True)
            if not isinstance(error, Exception):
                raise
            if not outcome._done:  # not a wait filed here (a closed subscriber files none)
                raise self.error from error

    # -- Dispatcher's hooks -----------------------------------------------------------------------

    def _new_future(self):
        return Outcome(self)

    def _report(self, holding) -> None:
        threading.Thread(target=holding.lock._report_lost, args=(holding,), name="rlock-lost", daemon=True).start()

    def _rebind(self, binding) -> None:
        threading.Thread(target=binding.lock._session.rebind_elsewhere, args=(binding,), name="rlock-rebind", daemon=True).start()

    def _ended(self) -> None:
        self.session.subscriber_closed(self)
        if threading.current_thread() is not self._reader:
            self.connection.disconnect()  # wakes the thread that reads, which ends
            with self._mutex:
                self._wake_reader()  # dozing while it is not its turn: it ends


class Outcome:
    """What a wait's future is to the blocking client: the part of concurrent.futures.Future it
    uses (done, result, set_result, set_exception, add_done_callback), on one lock that wakes
    its waiting thread: released by the result, or to give it its subscriber's reading turn. A
    Future's Condition cost every handoff of a hot lock several of the microseconds that its
    process spends on it under one GIL (issue 46)."""

    __slots__ = ("_subscriber", "_ready", "_up", "_mutex", "_done", "_value", "_error", "_callbacks")

    def __init__(self, subscriber):
        self._subscriber = subscriber
        self._ready = _thread.allocate_lock()
        self._ready.acquire()  # released to wake the waiting thread; for good once done
        self._up = False  # _ready is released
        self._mutex = _thread.allocate_lock()
        self._done = False
        self._value = self._error = None
        self._callbacks = None

    def done(self) -> bool:
        return self._done

    def result(self, timeout=None):
        """The result (or raises the error) once there is one; concurrent.futures.TimeoutError
        when none came within `timeout` seconds. Meanwhile the calling thread may read the
        subscriber's messages in its turn."""
        if not self._done:
            self._subscriber._await(self, math.inf if timeout is None else timeout)
            if not self._done:
                raise concurrent.futures.TimeoutError()
        if self._error is not None:
            raise self._error
        return self._value

    def _wake(self) -> None:
        """Wakes the waiting thread (at most one release pending)."""
        with self._mutex:
            if not self._up:
                self._up = True
                self._ready.release()

    def _sleep(self, timeout: float) -> bool:
        """Sleeps until woken (True) or `timeout` seconds passed (False). Once done, _ready
        stays released for any other caller."""
        if not self._ready.acquire(True, -1 if timeout >= threading.TIMEOUT_MAX else timeout):
            return False
        with self._mutex:
            if self._done:
                self._ready.release()
            else:
                self._up = False
        return True

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
            if not self._up:
                self._up = True
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

    def read(self, limit: float = math.inf):
        """The next frame other than a PONG; None when none came before a PING was due, or
        within `limit` seconds (the caller may look at its own state in between). Raises
        ConnectionError once the connection closed, or did not answer a PING."""
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
        if not self._readable(max(0.0, min(quiet_until - now, limit))):
            return None
        frame = self.connection.read_response()
        if isinstance(frame, list) and frame and word(frame[0]).lower() == b"pong":
            self.pinged_at = None
            return None
        return frame
