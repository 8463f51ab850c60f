"""The simulated trials' HTTP: keep-alive HTTP/1.1 over asyncio streams, as little as the
harness's requests need (JSON in, JSON or nothing out).

Why not httpx, which the rest of the benchmarks use: its asyncio stack cost the simulator about
a millisecond of CPU per request, and at 250 simulated agents the simulator's one core was
spent on it (py-spy: 80% of its samples) before the master was. Its late answers to the
WebSocket's pings then looked like the master's fault. This costs a small fraction of that.
"""

from __future__ import annotations

import asyncio
import json
import urllib.parse
from typing import Any


class Connection:
    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def request(self, head: bytes, body: bytes) -> tuple[int, bytes]:
        reused = self.writer is not None
        try:
            return await self._exchange(head, body)
        except (ConnectionError, asyncio.IncompleteReadError):
            self.close()
            if not reused:
                raise
        # A kept-alive connection the server had closed meanwhile: once more on a new one.
        return await self._exchange(head, body)

    async def _exchange(self, head: bytes, body: bytes) -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        self.writer.write(head + body)
        line = await self.reader.readline()
        if not line:
            raise ConnectionResetError("the master closed the connection")
        status = int(line.split()[1])
        length, chunked, close = 0, False, False
        while True:
            header = await self.reader.readline()
            if header in (b"\r\n", b""):
                break
            name, _, value = header.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"transfer-encoding":
                chunked = b"chunked" in value.lower()
            elif name == b"connection":
                close = value.strip().lower() == b"close"
        if chunked:
            parts = []
            while size := int((await self.reader.readline()).split(b";")[0], 16):
                parts.append(await self.reader.readexactly(size))
                await self.reader.readline()
            await self.reader.readline()
            content = b"".join(parts)
        else:
            content = await self.reader.readexactly(length) if length else b""
        if close:
            self.close()
        return status, content

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


class Pool:
    """Connections to one master, each used by one request at a time and kept for the next."""

    def __init__(self, url: str) -> None:
        parsed = urllib.parse.urlsplit(url)
        self.host = parsed.hostname or "127.0.0.1"
        self.port = parsed.port or 80
        self.idle: list[Connection] = []

    async def request(
        self,
        method: str,
        path: str,
        *,
        token: str,
        body: Any = None,
        params: dict[str, Any] | None = None,
        timeout: float = 30.0,
    ) -> tuple[int, bytes]:
        """The status and body of the answer; ``OSError``, ``asyncio.IncompleteReadError`` or
        ``TimeoutError`` when none came."""
        if params:
            path = f"{path}?{urllib.parse.urlencode(params)}"
        data = b"" if body is None else json.dumps(body).encode()
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
            f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\n\r\n"
        ).encode()
        conn = self.idle.pop() if self.idle else Connection(self.host, self.port)
        try:
            async with asyncio.timeout(timeout):
                answer = await conn.request(head, data)
        except BaseException:
            conn.close()
            raise
        self.idle.append(conn)
        return answer

    def close(self) -> None:
        for conn in self.idle:
            conn.close()
        self.idle.clear()
