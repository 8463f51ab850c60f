"""Requests to an ``http://`` master go over a socket of their own making (``client/_wire.py``),
written as ``http.client`` writes them, their answers read as it reads them: sized, chunked or
ended by the connection, kept alive, or cut short. (Loopback servers answer with the bytes each
test gives them.)"""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from assay.client import HttpSession
from assay.errors import AssayError, MasterUnreachable, NotFound

Answer = Callable[[bytes], bytes | None]
"""What the server writes back for a request it read (None: close without answering)."""


class RawServer:
    """A loopback server that reads each request (head and sized body) and writes back what
    ``answer`` makes of it, keeping the connection until the client closes it or ``answer``
    says to close (an answer ending the body with the connection)."""

    def __init__(self, answer: Answer, close_after: bool = False) -> None:
        self.answer = answer
        self.close_after = close_after
        self.requests: list[bytes] = []
        self.connections = 0
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._talk, args=(conn,), daemon=True).start()

    def _talk(self, conn: socket.socket) -> None:
        with conn:
            reader = conn.makefile("rb")
            while True:
                head = b""
                while not head.endswith(b"\r\n\r\n"):
                    line = reader.readline()
                    if not line:
                        return
                    head += line
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                request = head + reader.read(length)
                self.requests.append(request)
                reply = self.answer(request)
                if reply is None:
                    return
                conn.sendall(reply)
                if self.close_after:
                    return

    def close(self) -> None:
        self.sock.close()


@contextmanager
def serving(answer: Answer, close_after: bool = False) -> Iterator[RawServer]:
    server = RawServer(answer, close_after)
    try:
        yield server
    finally:
        server.close()


def sized(body: bytes, status: str = "200 OK", extra: str = "") -> bytes:
    head = f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n{extra}"
    return head.encode() + f"Content-Length: {len(body)}\r\n\r\n".encode() + body


def chunked(*chunks: bytes) -> bytes:
    out = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    for chunk in chunks:
        out += f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n"
    return out + b"0\r\n\r\n"


def test_a_request_is_written_as_http_client_writes_it() -> None:
    with serving(lambda _: sized(b"{}")) as server:
        session = HttpSession(server.url, token="t0k")
        session.post("/api/v1/things", {"a": [1, 2]}, params={"x": "y z"})
        session.get("/api/v1/things")
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
        body = json.dumps({"a": [1, 2]}).encode()
        headers = session.headers(None)
        conn.request(
            "POST", "/api/v1/things?x=y+z", body, {**headers, "Content-Type": "application/json"}
        )
        conn.getresponse().read()
        conn.request("GET", "/api/v1/things", headers=headers)
        conn.getresponse().read()
        conn.close()
    ours, theirs = server.requests[:2], server.requests[2:]
    assert ours == theirs


def test_answers_are_read_on_one_kept_alive_connection() -> None:
    with serving(lambda _: sized(b'{"n": 1}')) as server:
        session = HttpSession(server.url)
        assert [session.get("/a"), session.get("/b"), session.get("/c")] == [{"n": 1}] * 3
    assert server.connections == 1


def test_a_chunked_answer_is_read_whole_and_as_events_line_by_line() -> None:
    events = chunked(b"event: ", b'tick\ndata: {"i"', b": 1}\n\n", b"data: 2\n", b"\n")
    answers = iter([chunked(b'{"a"', b": ", b"[1, 2]}"), events])
    with serving(lambda _: next(answers)) as server:
        session = HttpSession(server.url)
        assert session.get("/whole") == {"a": [1, 2]}
        assert list(session.events("/events")) == [("tick", {"i": 1}), ("message", 2)]


def test_an_answer_ended_by_the_connection_is_read_and_the_next_request_connects_anew() -> None:
    with serving(lambda _: b'HTTP/1.0 200 OK\r\n\r\n{"end": true}', close_after=True) as server:
        session = HttpSession(server.url)
        assert session.get("/one") == {"end": True}
        assert session.get("/two") == {"end": True}
    assert server.connections == 2


def test_an_answer_saying_connection_close_is_followed_by_a_new_connection() -> None:
    with serving(lambda _: sized(b"1", extra="Connection: close\r\n"), close_after=True) as server:
        session = HttpSession(server.url)
        assert [session.get("/one"), session.get("/two")] == [1, 1]
    assert server.connections == 2


def test_a_connection_the_master_closed_unanswered_is_retried_once_on_a_new_one() -> None:
    replies = iter([None, sized(b"2")])
    with serving(lambda _: next(replies)) as server:
        assert HttpSession(server.url).get("/x") == 2
    assert server.connections == 2


def test_an_error_answer_is_the_error_it_carries() -> None:
    body = json.dumps({"error": {"type": "NotFound", "message": "no experiment 9"}}).encode()
    with (
        serving(lambda _: sized(body, "404 Not Found")) as server,
        pytest.raises(NotFound, match=r"^no experiment 9$"),
    ):
        HttpSession(server.url).get("/api/v1/experiments/9")


def test_something_that_is_not_an_http_server_is_no_master() -> None:
    with (
        serving(lambda _: b"SSH-2.0-OpenSSH_9.6\r\n", close_after=True) as server,
        pytest.raises(MasterUnreachable, match=r"^no master answering at .*SSH-2.0"),
    ):
        HttpSession(server.url).get("/x")


def test_an_answer_cut_short_is_a_master_that_stopped_answering() -> None:
    cut = b'HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{"partial'
    with (
        serving(lambda _: cut, close_after=True) as server,
        pytest.raises(MasterUnreachable, match=r"stopped answering: IncompleteRead\(9 bytes"),
    ):
        HttpSession(server.url).get("/x")


def test_an_answer_with_nothing_after_its_head_has_an_empty_body() -> None:
    with serving(lambda _: b"HTTP/1.1 204 No Content\r\n\r\n") as server:
        session = HttpSession(server.url)
        assert session.post("/a") is None and session.post("/b") is None
    assert server.connections == 1


def test_a_request_to_a_plain_master_loads_neither_http_client_nor_ssl() -> None:
    with serving(lambda _: sized(b'{"ok": 1}')) as server:
        code = (
            "import sys; from assay.client import HttpSession; "
            f"assert HttpSession({server.url!r}).get('/x') == {{'ok': 1}}; "
            "print(sorted(m for m in ('http.client', 'ssl', 'email') if m in sys.modules))"
        )
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
        )
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize(
    "host",
    ["127.0.0.1", "localhost", "localhost.", "a..b", "a" * 63, "a" * 64, ".a", "::1", "bücher.de"],
)
def test_a_host_name_is_refused_exactly_when_the_idna_codec_refuses_it(host: str) -> None:
    try:
        host.encode("idna")
        refused = False
    except UnicodeError:
        refused = True
    if refused:
        with pytest.raises(AssayError, match="is not valid: an empty label"):
            HttpSession(f"http://{host}:8080")
    else:
        HttpSession(f"http://[{host}]:8080" if ":" in host else f"http://{host}:8080")
