"""rlock.Election: leader election with etcd's verbs (campaign, leader, observe, resign) over
one rlock lock key; the shared part is in _election.py."""

from __future__ import annotations

import queue
import threading
from typing import Optional

from redis.exceptions import ConnectionError, LockNotOwnedError

from ._election import OBSERVER_NAME, ElectionBase, Leader, NoKeyspaceEvents, ObserverBase, follow
from ._notify import check_subscribed, is_message, word
from ._steps import drive
from .lock import Lock
from .subscriber import Listener

__all__ = ["Election", "Leader", "NoKeyspaceEvents", "Observer"]


class Election(ElectionBase):
    """A candidate in an election (see ElectionBase for the arguments)::

        election = rlock.Election(r, "scheduler", "10.0.0.7:8080", on_lost=stop_leading)
        term = election.campaign()        # waits until this candidate leads
        lead(fence=term)                  # election.guard("SET", ...) writes only while leading
        election.resign()

        for leader in election.observe(): # Leader(owner, term), or None while nobody leads
            ...
    """

    lock_class = Lock

    def campaign(self, timeout: Optional[float] = None) -> Optional[int]:
        """Waits in the server's FIFO queue of candidates (by message: no blocked connection)
        until this candidate leads, and returns its term; None when it does not lead within
        `timeout` seconds (None: no limit). Leading already: its term at once. The leadership
        is a watchdog holding: the server keeps it while rlock's connection lives and hands it
        to the next candidate within milliseconds when it closes (the process died)."""
        with self._campaigning:
            if self.term is None and not self._lock.acquire(**self._campaign_args(timeout)):
                return None
            return self.term

    def resign(self) -> None:
        """Gives up leadership: the next candidate leads at once. Nothing to do when not
        leading; a leadership already lost is reported by on_lost, not here. It does not stop
        a campaign under way in another thread (give campaign() a timeout for that)."""
        if self._lock._live_holding() is None:
            return
        try:
            self._lock.release()
        except LockNotOwnedError:
            pass

    def leader(self) -> Optional[Leader]:
        """The current leader (RLOCK.LEADER): Leader(owner, term), or None while nobody leads."""
        return self._leader(self._lock._run(self._leader_command()))

    def guard(self, *command):
        """Runs one write command, ``guard("SET", "k", "v")``, only while this candidate leads
        in its current term (RLOCK.GUARD); LockNotOwnedError, and nothing run, otherwise."""
        return self._lock.guard(*command)

    def observe(self) -> "Observer":
        """The leader now, then every change (None while nobody leads); see Observer."""
        return Observer(self)


class Observer(ObserverBase):
    """An iterator of an election's leader: first the leader when it starts (or None), then
    each change, driven by the key's keyspace events on a connection of its own (a thread reads
    it): nothing is sent between changes but a PING when quiet. The server must publish them
    (``notify-keyspace-events`` with K and d, or Kdgx); otherwise the first item raises
    NoKeyspaceEvents. After its connection drops it connects again and reads the leader, so a
    change missed meanwhile is reported late, never lost for good. ``next(timeout)`` raises
    TimeoutError when nothing changed within `timeout` seconds; close() (or ``with``) ends it."""

    def __init__(self, election: Election):
        self._election = election
        self._session = election._lock._session
        self._items = queue.SimpleQueue()
        self._closing = threading.Event()
        self._listener = None
        name = f"rlock-observer {election.name!r}"
        threading.Thread(target=self._run, name=name, daemon=True).start()

    # -- the reader's side: the flow's I/O steps, done when called --------------------------------

    def _run(self) -> None:
        try:
            drive(follow(self, self._election))
        except Exception as error:
            if not self.closed:  # else an error of the connection close() closed under it
                self._items.put(error)
        finally:
            self._items.put(self.END)
            self._disconnect()

    @property
    def closed(self) -> bool:
        return self._closing.is_set()

    def call(self, command):
        return self._session.call(command)[0]

    def listen(self, channel: bytes) -> None:
        """A new connection subscribed to the key's keyspace channel."""
        self._disconnect()
        connection = self._session._connect(protocol=2, client_name=OBSERVER_NAME)
        self._listener = Listener(connection, self._session.keepalive_interval())
        if self.closed:  # close() came meanwhile, and did not see this connection
            raise ConnectionError("rlock: the observer was closed")
        connection.send_command("SUBSCRIBE", channel, check_health=False)
        check_subscribed(connection.read_response())

    def next_event(self) -> None:
        """Returns once an event of the key came."""
        channel = self._election._keyspace_channel
        while True:
            frame = self._listener.read()
            if is_message(frame) and word(frame[1]) == channel:
                return

    def emit(self, leader: Optional[Leader]) -> None:
        if not self.closed:
            self._items.put((leader,))

    def sleep(self, seconds: float) -> None:
        self._closing.wait(seconds)

    def _disconnect(self) -> None:
        listener = self._listener
        if listener is not None:
            listener.connection.disconnect()

    # -- the caller's side --------------------------------------------------------------------

    def next(self, timeout: Optional[float] = None) -> Optional[Leader]:
        """The next leader; StopIteration once closed; TimeoutError when none came within
        `timeout` seconds."""
        if self._ended:
            raise StopIteration
        try:
            item = self._items.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"no change of leader of {self._election.name!r} within {timeout} s") from None
        return self._item(item, StopIteration)

    def __iter__(self) -> "Observer":
        return self

    def __next__(self) -> Optional[Leader]:
        return self.next()

    def close(self) -> None:
        """Stops observing and closes its connection."""
        self._closing.set()
        self._disconnect()

    def __enter__(self) -> "Observer":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()
