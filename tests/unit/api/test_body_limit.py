"""BodyLimit on a real FastAPI app, in process: what is refused, when, and what it says."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
from fastapi import FastAPI, Request

from assay.api._limits import BodyLimit, RouteLimit

LIMIT = 1000
BIG = 5000


def make_app(done: list[str]) -> FastAPI:
    app = FastAPI()

    @app.post("/echo")
    async def echo(request: Request) -> dict[str, Any]:
        body = await request.body()
        done.append(f"echo {len(body)}")
        return {"size": len(body)}

    @app.post("/act")
    async def act() -> dict[str, Any]:
        done.append("act")
        return {"done": True}

    @app.post("/big")
    async def big(request: Request) -> dict[str, Any]:
        body = await request.body()
        done.append(f"big {len(body)}")
        return {"size": len(body)}

    app.add_middleware(
        BodyLimit, default=LIMIT, routes={("POST", "/big"): RouteLimit(BIG, hint="send less")}
    )
    return app


def post(app: FastAPI, path: str, content: bytes | AsyncIterator[bytes]) -> httpx.Response:
    async def run() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return await client.post(path, content=content)

    return asyncio.run(run())


async def chunks(count: int, size: int) -> AsyncIterator[bytes]:
    for _ in range(count):
        yield b"x" * size


def test_body_exactly_at_the_limit_is_accepted() -> None:
    done: list[str] = []
    answer = post(make_app(done), "/echo", b"x" * LIMIT)
    assert answer.status_code == 200 and answer.json() == {"size": LIMIT}
    assert done == [f"echo {LIMIT}"]


def test_declared_length_over_the_limit_is_refused_before_the_route_runs() -> None:
    done: list[str] = []
    answer = post(make_app(done), "/act", b"x" * (LIMIT + 1))
    assert answer.status_code == 413
    error = answer.json()["error"]
    assert error["type"] == "TooLarge" and error["details"] == []
    assert error["message"] == (
        "request body too large: POST /act accepts at most 1000 B and this one declares 1001 B"
    )
    assert done == [], "a route that reads no body must not run for a refused request"


def test_streamed_body_is_cut_off_at_the_first_chunk_past_the_limit() -> None:
    done: list[str] = []
    # Chunked: no Content-Length, so only counting can catch it.
    answer = post(make_app(done), "/echo", chunks(10, 300))
    assert answer.status_code == 413
    message = answer.json()["error"]["message"]
    assert message == (
        "request body too large: POST /echo accepts at most 1000 B and 1.2 KiB had arrived when "
        "it was cut off"
    )
    assert done == [], "the route never sees a body that was cut off"


def test_streamed_body_within_the_limit_reaches_the_route_whole() -> None:
    done: list[str] = []
    answer = post(make_app(done), "/echo", chunks(5, 200))
    assert answer.status_code == 200 and answer.json() == {"size": 1000}


def test_a_route_with_its_own_limit_gets_it_and_its_hint() -> None:
    done: list[str] = []
    app = make_app(done)
    assert post(app, "/big", b"x" * BIG).json() == {"size": BIG}
    assert post(app, "/big/", b"x" * 10).status_code != 413, "a trailing slash is the same route"
    refused = post(app, "/big", chunks(6, 1000))
    assert refused.status_code == 413
    assert refused.json()["error"]["message"].endswith("; send less")
    assert "accepts at most 4.9 KiB" in refused.json()["error"]["message"]
    assert post(app, "/echo", b"x" * (LIMIT + 1)).status_code == 413, "others keep the default"
    assert done == [f"big {BIG}"]
