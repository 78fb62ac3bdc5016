#!/usr/bin/env python3
"""Capture the shape of hubload's publishes, so the reference tools can send the same bytes.

Listens on 127.0.0.1 (a free port, printed as the first line of stdout), answers every request
as a hub accepting a publish (200, `hub.mode=accepted`), and once COUNT publishes
(`hub.mode=publish` in the request line) have arrived writes OUT, a shell fragment:

    REQ_PATH='/hub?hub.mode=publish&hub.topic=…'   the first publish's path and query
    REQ_HEADERS=('Name: value' …)                  its headers but Host and Content-Length
    REQ_BODY_MEAN=690                              the publishes' mean body length, bytes
    REQ_MEAN=954                                   their mean request length (line, head, body)
    REQ_COUNT=3000                                 how many were averaged

then exits. When fewer arrive within 60 s it writes nothing and exits 1 (the bench stops).
Used by bench/http-vs-wrk.sh (`REQUEST=hubload`): see bench/README.md.

Usage: capture-request.py COUNT OUT
"""

import shlex
import socket
import sys
import threading
import time

LIMIT_S = 60

RESPONSE = (
    b"HTTP/1.1 200 OK\r\nContent-Type: application/x-www-form-urlencoded\r\n"
    b"Content-Length: 17\r\n\r\nhub.mode=accepted"
)


def main() -> None:
    count, out = int(sys.argv[1]), sys.argv[2]
    lock = threading.Lock()
    seen = {"n": 0, "body": 0, "total": 0, "first": None}
    done = threading.Event()

    def serve(conn: socket.socket) -> None:
        buf = b""
        with conn:
            while not done.is_set():
                data = conn.recv(65536)
                if not data:
                    return
                buf += data
                while b"\r\n\r\n" in buf:
                    head, rest = buf.split(b"\r\n\r\n", 1)
                    lines = head.decode("latin-1").split("\r\n")
                    length = 0
                    for line in lines[1:]:
                        name, _, value = line.partition(":")
                        if name.strip().lower() == "content-length":
                            length = int(value)
                    if len(rest) < length:
                        break
                    buf = rest[length:]
                    last = False
                    if "hub.mode=publish" in lines[0]:
                        with lock:
                            if seen["n"] < count:
                                seen["n"] += 1
                                seen["body"] += length
                                seen["total"] += len(head) + 4 + length
                                if seen["first"] is None:
                                    seen["first"] = lines
                                last = seen["n"] == count
                    conn.sendall(RESPONSE)
                    # Only once the last publish is answered: the capture run ends clean.
                    if last:
                        done.set()

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(256)
    server.settimeout(0.2)
    print(server.getsockname()[1], flush=True)
    deadline = time.monotonic() + LIMIT_S
    while not done.is_set():
        if time.monotonic() > deadline:
            print(f"capture-request: {seen['n']} of {count} publishes in {LIMIT_S} s", file=sys.stderr)
            sys.exit(1)
        try:
            conn, _ = server.accept()
        except socket.timeout:
            continue
        threading.Thread(target=serve, args=(conn,), daemon=True).start()

    lines = seen["first"]
    path = lines[0].split(" ")[1]
    headers = [
        line
        for line in lines[1:]
        if line.split(":", 1)[0].strip().lower() not in ("host", "content-length")
    ]
    n = seen["n"]
    with open(out, "w", encoding="utf-8") as f:
        f.write(f"REQ_PATH={shlex.quote(path)}\n")
        f.write("REQ_HEADERS=(" + " ".join(shlex.quote(h) for h in headers) + ")\n")
        f.write(f"REQ_BODY_MEAN={round(seen['body'] / n)}\n")
        f.write(f"REQ_MEAN={round(seen['total'] / n)}\n")
        f.write(f"REQ_COUNT={n}\n")


if __name__ == "__main__":
    main()
