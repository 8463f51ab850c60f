"""A stand-in HTTP server on loopback, for tests of a client's side against answers the real
master never gives (or gives only later)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class QuietHandler(BaseHTTPRequestHandler):
    """A request handler that keeps its access log off the test's output."""

    def answer(self, body: bytes, content_type: str = "application/octet-stream") -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@contextlib.contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """``handler`` answering on a free loopback port, each request in a thread of its own; the
    server's URL. Shut down on leaving."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class Recorded:
    """What a stand-in server was sent: (method, path, headers) of each request."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests: list[tuple[str, str, dict[str, str]]] = []

    def add(self, method: str, path: str, headers: dict[str, str]) -> None:
        with self.lock:
            self.requests.append((method, path, headers))

    def seen(self) -> list[tuple[str, str, dict[str, str]]]:
        with self.lock:
            return list(self.requests)


def refusing_store(recorded: Recorded, words: str) -> type[QuietHandler]:
    """A server that records every request and answers it as S3 answers a refused key, with
    ``words`` as its message (so a test can see whether they are passed on)."""

    class Handler(QuietHandler):
        def _refuse(self) -> None:
            recorded.add(self.command, self.path, dict(self.headers.items()))
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            body = (
                '<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code>'
                f"<Message>{words}</Message></Error>"
            ).encode()
            self.send_response(403)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _refuse  # noqa: N815 (http.server calls these)

    return Handler
