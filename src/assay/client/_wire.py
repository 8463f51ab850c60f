"""HTTP/1.1 to a master at an ``http://`` URL, over a socket: a request, and its answer's status
and body, read whole or line by line (server-sent events), on a connection kept alive.

``http.client`` imports ``email`` and ``ssl``, which took a quarter of what ``assay e list``
spends beyond typer and rich, and a part of every trial's start; what a request of
:class:`~assay.client.HttpSession` needs of it is this much. An ``https://`` master, and a
streamed upload or download, still go through ``http.client``. The messages are
``http.client``'s, as are its limits on what an answer may hold.
"""

from __future__ import annotations

import io
import socket
from collections.abc import Callable, Mapping

MAX_LINE = 65536
"""The longest status or header line read (``http.client``'s limit)."""

MAX_HEADERS = 100
"""The most header lines an answer may have (``http.client``'s limit)."""

_EXPECTING_BODY = frozenset({"PATCH", "POST", "PUT"})


class BadAnswer(ConnectionError):
    """What came back is not an HTTP answer, or not all of one: whatever answers is not a master
    (or stopped answering mid-way)."""


class Response:
    """The answer to one request: ``status``, ``reason``, ``headers`` (names in lower case) and
    the body, read once, whole (:meth:`read`) or by lines (:meth:`readline`)."""

    def __init__(
        self, reader: io.BufferedReader, method: str, done: Callable[[Response], None]
    ) -> None:
        self._file = reader
        self._done = done
        self.status, self.reason, version = self._status_line()
        while self.status == 100:  # 100 Continue: the answer follows it
            self._headers()
            self.status, self.reason, version = self._status_line()
        self.headers = self._headers()
        connection = self.headers.get("connection", "").lower()
        self.will_close = version == "HTTP/1.0" or "close" in connection
        self._chunked = "chunked" in self.headers.get("transfer-encoding", "").lower()
        self._left: int | None = None  # bytes of a sized body still to read
        self._pending = b""  # decoded bytes of a chunked body not yet given out
        self._finished = False
        if method == "HEAD" or self.status in (204, 304) or 100 <= self.status < 200:
            self._finish()
        elif not self._chunked:
            length = self.headers.get("content-length")
            if length is None:
                self.will_close = True  # the body ends where the connection does
            else:
                try:
                    self._left = int(length)
                except ValueError:
                    raise BadAnswer(f"invalid Content-Length: {length!r}") from None
                if self._left < 0:
                    raise BadAnswer(f"invalid Content-Length: {length!r}")
                if self._left == 0:
                    self._finish()

    def _line(self) -> bytes:
        line = self._file.readline(MAX_LINE + 1)
        if len(line) > MAX_LINE:
            raise BadAnswer("got more than 65536 bytes when reading a line")
        return line

    def _status_line(self) -> tuple[int, str, str]:
        line = self._line()
        if not line:
            # A kept-alive connection the server closed (the caller retries on a new one).
            raise ConnectionResetError("Remote end closed connection without response")
        text = line.decode("iso-8859-1").rstrip("\r\n")
        version, _, rest = text.partition(" ")
        code, _, reason = rest.partition(" ")
        if not version.startswith("HTTP/") or len(code) != 3 or not code.isdigit():
            raise BadAnswer(repr(text))
        return int(code), reason.strip(), version

    def _headers(self) -> dict[str, str]:
        headers: dict[str, str] = {}
        for _ in range(MAX_HEADERS + 1):
            line = self._line()
            if line in (b"\r\n", b"\n", b""):
                return headers
            name, _, value = line.decode("iso-8859-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        raise BadAnswer(f"got more than {MAX_HEADERS} headers")

    def _finish(self) -> None:
        if not self._finished:
            self._finished = True
            self._done(self)

    def _next_chunk(self) -> bytes:
        """The next chunk of a chunked body; b"" after the last (its trailer read)."""
        size_line = self._line()
        try:
            size = int(size_line.split(b";", 1)[0].strip(), 16)
        except ValueError:
            raise BadAnswer(f"invalid chunk size line: {size_line!r}") from None
        if size == 0:
            while self._line() not in (b"\r\n", b"\n", b""):
                pass  # trailer fields: none a master sends
            self._finish()
            return b""
        data = self._exactly(size)
        self._exactly(2)  # the CRLF after the chunk
        return data

    def _exactly(self, n: int) -> bytes:
        data = self._file.read(n)
        if len(data) < n:
            raise BadAnswer(
                f"IncompleteRead({len(data)} bytes read, {n - len(data)} more expected)"
            )
        return data

    def read(self) -> bytes:
        """The rest of the body."""
        if self._finished:
            data, self._pending = self._pending, b""
            return data
        if self._chunked:
            parts = [self._pending]
            self._pending = b""
            while chunk := self._next_chunk():
                parts.append(chunk)
            return b"".join(parts)
        if self._left is None:
            data = self._file.read()
            self._finish()
            return data
        data = self._exactly(self._left)
        self._left = 0
        self._finish()
        return data

    def readline(self) -> bytes:
        """The body's next line, with its line end; b"" at its end."""
        if self._chunked:
            while b"\n" not in self._pending and not self._finished:
                self._pending += self._next_chunk()
            line, sep, rest = self._pending.partition(b"\n")
            self._pending = rest
            return line + sep
        if self._finished:
            return b""
        if self._left is None:
            line = self._file.readline()
            if not line:
                self._finish()
            return line
        line = self._file.readline(self._left)
        if not line:
            raise BadAnswer(f"IncompleteRead(0 bytes read, {self._left} more expected)")
        self._left -= len(line)
        if self._left == 0:
            self._finish()
        return line


class Connection:
    """One connection to ``host:port``, made at the first request and kept for the next while
    the master keeps it; ``timeout`` bounds connecting and each wait for the master."""

    def __init__(self, host: str, port: int, timeout: float) -> None:
        self.host = host
        self.port = port
        self.timeout = timeout
        self.sock: socket.socket | None = None
        self._file: io.BufferedReader | None = None
        self._method = "GET"
        shown = f"[{host}]" if ":" in host else host
        self._host_header = shown if port == 80 else f"{shown}:{port}"

    def connect(self) -> None:
        # An ASCII host as bytes: given text, the resolver loads the IDNA codec to encode it.
        host: str | bytes = self.host.encode("ascii") if self.host.isascii() else self.host
        self.sock = socket.create_connection((host, self.port), self.timeout)  # type: ignore[arg-type]
        # A request goes out in one write; waiting to gather more would only delay it.
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._file = self.sock.makefile("rb")

    def request(
        self, method: str, target: str, body: bytes | None = None, headers: Mapping[str, str] = {}
    ) -> None:
        """Send a request (connecting first when not connected), as ``http.client`` writes
        one."""
        if self.sock is None:
            self.connect()
        assert self.sock is not None
        names = {name.lower() for name in headers}
        lines = [f"{method} {target} HTTP/1.1"]
        if "host" not in names:
            lines.append(f"Host: {self._host_header}")
        if "accept-encoding" not in names:
            lines.append("Accept-Encoding: identity")
        if "content-length" not in names:
            if body is not None:
                lines.append(f"Content-Length: {len(body)}")
            elif method.upper() in _EXPECTING_BODY:
                lines.append("Content-Length: 0")
        lines += [f"{name}: {value}" for name, value in headers.items()]
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        self._method = method.upper()
        self.sock.sendall(head + body if body else head)

    def getresponse(self) -> Response:
        """The answer to the request sent; a connection the master will close is closed once
        the answer's body has been read."""
        if self._file is None:
            raise BadAnswer("no request was sent")
        return Response(self._file, self._method, self._answered)

    def _answered(self, answer: Response) -> None:
        if answer.will_close:
            self.close()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        if self.sock is not None:
            self.sock.close()
            self.sock = None


__all__ = ["BadAnswer", "Connection", "Response"]
