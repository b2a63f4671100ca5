#!/usr/bin/env python3
"""client.py PORT FILE: sends each line of FILE (words split on spaces) as one command and
waits for its reply before the next, like `redis-cli < FILE`, printing one line per reply.

Not redis-cli itself: redis-cli sends COMMAND DOCS when it connects (~5.9 million instructions
in processCommand on Redis 7.0.15, ~295 per call over 20,000 calls), which would be counted with
the commands measured."""
import socket
import sys


def main():
    port, path = int(sys.argv[1]), sys.argv[2]
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    rfile = sock.makefile("rb")
    out = sys.stdout
    with open(path, "rb") as f:
        for line in f:
            words = line.split()
            if not words:
                continue
            msg = [b"*%d\r\n" % len(words)]
            for w in words:
                msg.append(b"$%d\r\n%s\r\n" % (len(w), w))
            sock.sendall(b"".join(msg))
            out.write(read_reply(rfile) + "\n")
    sock.close()


def read_reply(rfile):
    """One reply, flattened to a line (arrays joined by spaces)."""
    line = rfile.readline()
    if not line:
        raise SystemExit("connection closed")
    kind, rest = line[:1], line[1:-2].decode()
    if kind in (b"+", b"-", b":"):
        return rest
    if kind == b"$":
        n = int(rest)
        return "(nil)" if n < 0 else rfile.read(n + 2)[:-2].decode(errors="replace")
    if kind == b"*":
        n = int(rest)
        return "(nil)" if n < 0 else " ".join(read_reply(rfile) for _ in range(n))
    raise SystemExit("unexpected reply: %r" % line)


if __name__ == "__main__":
    main()
