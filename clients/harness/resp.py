"""The few RESP2 calls the topology harness makes, over a plain socket (no client library, so the
harness runs under any python3)."""

from __future__ import annotations

import socket


class RespError(Exception):
    """An error reply from the server."""


# Ports (and their bus ports) already handed out: a topology asks for all its ports before its
# servers bind them, and the kernel may offer a port it just offered again.
_handed_out: set[int] = set()


def free_port() -> int:
    """A loopback port that is free now and whose cluster bus port (+10000) is free too,
    neither handed out before by this process."""
    while True:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        if port + 10000 > 65535 or {port, port + 10000} & _handed_out:
            continue
        with socket.socket() as bus:
            try:
                bus.bind(("127.0.0.1", port + 10000))
            except OSError:
                continue
        _handed_out.update((port, port + 10000))
        return port


class Resp:
    def __init__(self, host: str, port: int, timeout: float):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.reader = self.sock.makefile("rb")

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.reader.close()
        self.sock.close()

    def call(self, *args):
        parts = [b"*%d\r\n" % len(args)]
        for arg in args:
            data = arg if isinstance(arg, bytes) else str(arg).encode()
            parts.append(b"$%d\r\n%s\r\n" % (len(data), data))
        self.sock.sendall(b"".join(parts))
        reply = self._read()
        if isinstance(reply, RespError):
            raise reply
        return reply

    def _read(self):
        line = self.reader.readline()
        if not line:
            raise ConnectionError("the server closed the connection")
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            return RespError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            length = int(rest)
            if length < 0:
                return None
            data = self.reader.read(length + 2)[:-2]
            return data.decode(errors="replace")
        if kind == b"*":
            length = int(rest)
            return None if length < 0 else [self._read() for _ in range(length)]
        raise ConnectionError(f"unexpected reply {line!r}")
