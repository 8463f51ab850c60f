"""The Host and Origin checks on a tiny app, in process: who may reach it and who may change
state through it."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from fastapi import FastAPI, Request, WebSocket

from assay.api._guard import Guard, allowed_hosts, host_pattern, is_loopback

MASTER = "http://127.0.0.1:8080"
UI = "https://ui.example"


def make_app(done: list[str], hosts: list[str] | None = None) -> FastAPI:
    app = FastAPI()

    @app.get("/thing")
    async def thing() -> dict[str, Any]:
        done.append("get")
        return {"ok": True}

    @app.api_route("/act", methods=["POST", "PUT", "PATCH", "DELETE", "PROPFIND"])
    async def act(request: Request) -> dict[str, Any]:
        done.append(f"{request.method} {len(await request.body())}")
        return {"ok": True}

    @app.websocket("/ws")
    async def socket(ws: WebSocket) -> None:
        await ws.accept()
        done.append("ws")
        await ws.send_json({"hello": True})
        await ws.close()

    if hosts is None:
        hosts = allowed_hosts("127.0.0.1", ["master.example", "*.corp.example"])
    app.add_middleware(Guard, hosts=hosts, origins=[UI])
    return app


class InProcess:
    """Requests to the app in process (httpx's ASGI transport)."""

    def __init__(self, done: list[str], hosts: list[str] | None = None) -> None:
        self.app = make_app(done, hosts)

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        async def run() -> httpx.Response:
            transport = httpx.ASGITransport(app=self.app)
            async with httpx.AsyncClient(transport=transport, base_url=MASTER) as http:
                return await http.request(method, path, **kwargs)

        return asyncio.run(run())

    def get(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.request("POST", path, **kwargs)


def handshake(
    done: list[str], headers: dict[str, str], *, denial_responses: bool = True
) -> list[dict[str, Any]]:
    """What the app sends when a WebSocket client opens /ws with ``headers`` (the Host
    defaults to the master's), as an ASGI server would see it."""
    headers = {"host": "127.0.0.1:8080", **{k.lower(): v for k, v in headers.items()}}
    scope = {
        "type": "websocket",
        "scheme": "ws",
        "path": "/ws",
        "raw_path": b"/ws",
        "query_string": b"",
        "root_path": "",
        "headers": [(k.encode(), v.encode()) for k, v in headers.items()],
        "client": ("127.0.0.1", 5000),
        "server": ("127.0.0.1", 8080),
        "subprotocols": [],
        "extensions": {"websocket.http.response": {}} if denial_responses else {},
    }
    sent: list[dict[str, Any]] = []
    messages = iter([{"type": "websocket.connect"}])

    async def receive() -> dict[str, Any]:
        return next(messages, {"type": "websocket.disconnect", "code": 1000})

    async def send(message: Any) -> None:
        sent.append(message)

    async def run() -> None:
        await make_app(done).build_middleware_stack()(scope, receive, send)

    asyncio.run(run())
    return sent


def assert_refused(answer: Any, status: int, kind: str, *words: str) -> None:
    assert answer.status_code == status, answer.text
    error = answer.json()["error"]
    assert error["type"] == kind and error["details"] == []
    for word in words:
        assert word in error["message"]


def test_the_forged_kill_request_is_refused_before_the_route_runs() -> None:
    done: list[str] = []
    answer = InProcess(done).post(
        "/act",
        content=b"x",
        headers={"Origin": "http://evil.example", "Content-Type": "text/plain"},
    )
    assert_refused(answer, 403, "Forbidden", "'http://evil.example'", "POST", "allowed_origins")
    assert done == []


@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data"]
)
def test_simple_content_types_from_a_foreign_origin_are_refused(content_type: str) -> None:
    done: list[str] = []
    answer = InProcess(done).post(
        "/act", content=b"a=1", headers={"Origin": UI + ":444", "Content-Type": content_type}
    )
    assert answer.status_code == 403
    assert done == []


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE", "PROPFIND"])
def test_every_state_changing_method_is_checked(method: str) -> None:
    done: list[str] = []
    answer = InProcess(done).request(method, "/act", headers={"Origin": "http://evil.example"})
    assert answer.status_code == 403
    assert done == []


@pytest.mark.parametrize("method", ["GET", "HEAD", "OPTIONS"])
def test_reading_from_a_foreign_origin_is_not_refused_here(method: str) -> None:
    # The browser keeps the answer from the foreign page (no CORS headers are sent).
    done: list[str] = []
    answer = InProcess(done).request(method, "/thing", headers={"Origin": "http://evil.example"})
    assert answer.status_code != 403


def test_programs_send_no_origin_and_pass() -> None:
    done: list[str] = []
    answer = InProcess(done).post(
        "/act", files={"context": ("context.tar.gz", b"data")}, data={"config": "name: x"}
    )
    assert answer.status_code == 200
    assert done and done[0].startswith("POST ")


@pytest.mark.parametrize(
    ("host", "origin"),
    [
        ("127.0.0.1:8080", "http://127.0.0.1:8080"),
        ("localhost:8080", "http://LOCALHOST:8080"),
        ("[::1]:8080", "http://[::1]:8080"),
        ("master.example", "http://master.example"),
        ("master.example", "http://master.example:80"),
        ("master.example:443", "https://master.example"),
        # A proxy that ends TLS forwards the page's https origin to the master's http port.
        ("master.example:8443", "https://master.example:8443"),
        ("127.0.0.1:8080", UI),
        ("127.0.0.1:8080", UI + ":443"),
    ],
)
def test_the_masters_own_pages_and_allowed_origins_pass(host: str, origin: str) -> None:
    done: list[str] = []
    answer = InProcess(done).post("/act", content=b"{}", headers={"Host": host, "Origin": origin})
    assert answer.status_code == 200, answer.text
    assert done == ["POST 2"]


@pytest.mark.parametrize(
    ("host", "origin"),
    [
        ("127.0.0.1:8080", "http://localhost:8080"),
        ("127.0.0.1:8080", "http://127.0.0.1:9999"),
        ("127.0.0.1:8080", "http://127.0.0.1"),
        ("master.example", "https://master.example"),
        ("master.example:8080", "http://evil.master.example:8080"),
        ("127.0.0.1:8080", "http://ui.example"),
        ("127.0.0.1:8080", "https://ui.example:8443"),
        ("127.0.0.1:8080", "https://ui.example.evil"),
        ("127.0.0.1:8080", "null"),
        ("127.0.0.1:8080", ""),
        ("127.0.0.1:8080", "127.0.0.1:8080"),
        ("127.0.0.1:8080", "file:///home/user/page.html"),
        ("127.0.0.1:8080", "http://127.0.0.1:99999"),
        ("127.0.0.1:8080", "http://[::1"),
    ],
)
def test_other_origins_are_refused(host: str, origin: str) -> None:
    done: list[str] = []
    answer = InProcess(done).post("/act", content=b"{}", headers={"Host": host, "Origin": origin})
    assert_refused(answer, 403, "Forbidden", "may not use POST")
    assert done == []


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1:8080",
        "127.0.0.1",
        "localhost:8080",
        "LocalHost:8080",
        "[::1]:8080",
        "master.example",
        "MASTER.example:8080",
        "build.corp.example:8080",
    ],
)
def test_the_masters_names_are_answered(host: str) -> None:
    done: list[str] = []
    assert InProcess(done).get("/thing", headers={"Host": host}).status_code == 200
    assert done == ["get"]


@pytest.mark.parametrize(
    "host",
    [
        "evil.example",
        "evil.example:8080",
        "127.0.0.1.evil.example",
        "corp.example",
        "master.example.evil",
        "10.0.0.1:8080",
        "[::2]:8080",
        "a b",
        "",
    ],
)
def test_other_host_names_are_refused_with_the_error_shape(host: str) -> None:
    # What DNS rebinding sends: the attacker's name, resolved to the master's address.
    done: list[str] = []
    answer = InProcess(done).post("/act", content=b"{}", headers={"Host": host})
    assert_refused(answer, 400, "InvalidRequest", "is not a name this master answers to")
    assert "--allowed-host" in answer.json()["error"]["message"]
    assert done == []


def test_a_star_answers_to_any_name_but_still_checks_origins() -> None:
    done: list[str] = []
    app = InProcess(done, hosts=["*"])
    assert app.get("/thing", headers={"Host": "anything.example"}).status_code == 200
    forged = app.post("/act", headers={"Host": "anything.example", "Origin": "http://evil"})
    assert forged.status_code == 403
    assert done == ["get"]


def test_the_websocket_opens_without_an_origin_and_from_the_masters_own_pages() -> None:
    done: list[str] = []
    for headers in ({}, {"Origin": MASTER}, {"Origin": UI}):
        sent = handshake(done, headers)
        assert [m["type"] for m in sent] == [
            "websocket.accept",
            "websocket.send",
            "websocket.close",
        ]
    assert done == ["ws"] * 3


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"Origin": "http://evil.example"}, 403),
        ({"Origin": "null"}, 403),
        ({"Origin": "http://127.0.0.1:8081"}, 403),
        ({"Host": "evil.example:8080"}, 400),
    ],
)
def test_the_websocket_handshake_from_elsewhere_is_denied(
    headers: dict[str, str], status: int
) -> None:
    done: list[str] = []
    sent = handshake(done, headers)
    assert [m["type"] for m in sent] == [
        "websocket.http.response.start",
        "websocket.http.response.body",
    ]
    assert sent[0]["status"] == status
    assert b'"error"' in sent[1]["body"]
    assert done == []


def test_a_server_without_denial_responses_closes_the_forged_handshake() -> None:
    done: list[str] = []
    sent = handshake(done, {"Origin": "http://evil.example"}, denial_responses=False)
    assert [m["type"] for m in sent] == ["websocket.close"]
    assert sent[0]["code"] == 1008 and "evil.example" in sent[0]["reason"]
    assert done == []


@pytest.mark.parametrize(
    ("bind", "extra", "expected"),
    [
        ("127.0.0.1", [], ["127.0.0.1", "localhost", "[::1]"]),
        ("0.0.0.0", [], ["127.0.0.1", "localhost", "[::1]"]),
        ("::", [], ["127.0.0.1", "localhost", "[::1]"]),
        ("10.1.2.3", [], ["127.0.0.1", "localhost", "[::1]", "10.1.2.3"]),
        ("Master.Example", [], ["127.0.0.1", "localhost", "[::1]", "master.example"]),
        ("fe80::1", ["x.example"], ["127.0.0.1", "localhost", "[::1]", "[fe80::1]", "x.example"]),
        ("::1", ["localhost"], ["127.0.0.1", "localhost", "[::1]"]),
    ],
)
def test_the_names_a_master_answers_to(bind: str, extra: list[str], expected: list[str]) -> None:
    assert allowed_hosts(bind, extra) == expected


def test_ipv6_literals_are_spelled_as_in_a_host_header() -> None:
    assert host_pattern("::1") == "[::1]"
    assert host_pattern("[0:0::1]") == "[::1]"
    assert host_pattern("Example.COM") == "example.com"


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.0.1.1", True),
        ("localhost", True),
        ("::1", True),
        ("[::1]", True),
        ("0.0.0.0", False),
        ("::", False),
        ("10.0.0.1", False),
        ("master.example", False),
    ],
)
def test_which_bind_addresses_are_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback
