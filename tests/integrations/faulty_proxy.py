"""A small TCP proxy in front of a real server that injects faults, one per request, in order:
`"drop"` forwards the request, lets the server answer, then closes the client's connection without the
answer (the write happened, the client never heard); `"429"`/`"503"` answer that status itself
(Retry-After: 0) without forwarding; None forwards normally. It speaks enough HTTP/1.1 for httpx:
Content-Length bodies, keep-alive."""

from __future__ import annotations

import socket
import threading
from collections import deque

from tests.integrations.conftest import free_port


def _read_message(sock: socket.socket, buf: bytearray) -> bytes | None:
    """One HTTP message (head and Content-Length body) from `sock`; None at EOF."""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        buf.extend(chunk)
    head_end = buf.index(b"\r\n\r\n") + 4
    length = 0
    for line in bytes(buf[:head_end]).split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    while len(buf) < head_end + length:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        buf.extend(chunk)
    message = bytes(buf[: head_end + length])
    del buf[: head_end + length]
    return message


class FaultyProxy:
    def __init__(self, upstream_port: int, faults: list[str | None]) -> None:
        self.upstream_port = upstream_port
        self.faults: deque[str | None] = deque(faults)
        self.requests: list[bytes] = []
        self.port = free_port()
        self._server = socket.create_server(("127.0.0.1", self.port))
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self._server.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
        from_client, from_upstream = bytearray(), bytearray()
        try:
            while (request := _read_message(client, from_client)) is not None:
                with self._lock:
                    self.requests.append(request)
                    fault = self.faults.popleft() if self.faults else None
                if fault in ("429", "503"):
                    client.sendall(
                        f"HTTP/1.1 {fault} Busy\r\nRetry-After: 0\r\nContent-Type: application/json\r\n"
                        f"Content-Length: 2\r\n\r\n{{}}".encode()
                    )
                    continue
                upstream.sendall(request)
                answer = _read_message(upstream, from_upstream)
                if answer is None or fault == "drop":
                    return
                client.sendall(answer)
        finally:
            client.close()
            upstream.close()
