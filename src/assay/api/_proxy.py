"""``/proxy/<task id>/...``: the master's reverse proxy to what a task serves (TensorBoards,
notebooks), HTTP and WebSocket, so it works through the master's one port.

Every request needs a signed-in user, as the API does, and a notebook's its owner or an admin
(checked on every request and on every WebSocket handshake): a bearer token (programs), or the
``assay_proxy`` cookie (browsers, which cannot add a header to a page's requests). A browser
gets the cookie by opening the URL once with ``?token=<token>`` (an access token, or a one-time
sign-in token, spent for a new session there): the master checks the token,
sets it as an HttpOnly, SameSite=Strict cookie scoped to that task's path, and redirects to
the same URL without it, so the token leaves the address bar and the history's next entry.
Neither the token nor any cookie is passed on to the task (the browser's ``assay_session``
cookie is scoped to ``/api/`` and never sent here in the first place), and a ``Set-Cookie`` of
the task's that names one of the master's cookies is dropped, so a proxied app can neither read
a user's session nor put its own in its place. What the proxy adds for the task (a notebook's
own token) comes from the master, never from the client. ``Origin`` is checked by the master's
guard (``_guard.py``) and not passed on: the task sees the proxy's requests as its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import urllib.parse
from collections.abc import AsyncIterator, Coroutine, Iterable
from typing import Annotated, Any

import httpx
import websockets
from fastapi import APIRouter, FastAPI, Path, Request, WebSocket, WebSocketDisconnect
from fastapi.responses import JSONResponse, RedirectResponse, Response, StreamingResponse
from starlette.background import BackgroundTask
from websockets.typing import Subprotocol

from assay import rest
from assay.api._deps import SESSION_COOKIE, MasterDep, bearer_token
from assay.errors import AssayError, Conflict, Unauthorized, Unavailable
from assay.master import Master, ProxyTarget

router = APIRouter(include_in_schema=False)

COOKIE = "assay_proxy"
TOKEN_PARAM = "token"
_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
# Hop-by-hop headers (RFC 9110 section 7.6.1) and what must not reach the task.
_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    }
)
_PRIVATE = frozenset({"authorization", "cookie", "origin"})
_MASTERS_COOKIES = frozenset({COOKIE, SESSION_COOKIE})
# The master's server sets these on every answer: the task's copies would be duplicates.
_OWN = frozenset({"server", "date"})
_TIMEOUT = httpx.Timeout(60.0, connect=5.0)
TaskId = Annotated[int, Path(ge=0, le=rest.INT_MAX, description="The task's id.")]


def proxy_client(app: FastAPI) -> httpx.AsyncClient:
    """The app's one client to tasks (its connections are reused), made on first use."""
    client: httpx.AsyncClient | None = getattr(app.state, "proxy_client", None)
    if client is None:
        client = httpx.AsyncClient(timeout=_TIMEOUT, follow_redirects=False, trust_env=False)
        app.state.proxy_client = client
    return client


async def close_proxy_client(app: FastAPI) -> None:
    client: httpx.AsyncClient | None = getattr(app.state, "proxy_client", None)
    if client is not None:
        app.state.proxy_client = None
        await client.aclose()


@router.api_route("/proxy/{task_id}", methods=_METHODS)
async def proxy_root(task_id: TaskId, request: Request) -> Response:
    """TensorBoard's pages link relative to the directory: add the slash."""
    query = f"?{request.url.query}" if request.url.query else ""
    return RedirectResponse(f"/proxy/{task_id}/{query}", status_code=307)


@router.api_route("/proxy/{task_id}/{path:path}", methods=_METHODS)
async def proxy(task_id: TaskId, path: str, request: Request, master: MasterDep) -> Response:
    prefix = f"/proxy/{task_id}/"
    given = request.query_params.get(TOKEN_PARAM)
    if given is not None:
        try:
            await master.users.authenticate(given)
        except Unauthorized:
            # A one-time sign-in token (what `assay notebook open` puts in the link it opens)
            # is spent here for a session of the browser's own.
            given = (await master.users.exchange_one_time(given)).token
        rest_of_query = [(k, v) for k, v in request.query_params.multi_items() if k != TOKEN_PARAM]
        query = urllib.parse.urlencode(rest_of_query)
        redirect = RedirectResponse(
            f"{prefix}{urllib.parse.quote(path)}{'?' + query if query else ''}", status_code=303
        )
        redirect.set_cookie(
            COOKIE,
            given,
            path=prefix,
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
        )
        return redirect
    token = bearer_token(request.headers.get("authorization")) or request.cookies.get(COOKIE)
    if not token:
        raise Unauthorized(
            f"sign in first: send `Authorization: Bearer <token>`, or open {prefix}?token=<token> "
            "once in a browser (an access token from `assay token create`)"
        )
    actor = await master.users.authenticate(token)
    try:
        target = await master.tasks.proxy_target(actor, task_id)
    except Conflict as exc:
        return unavailable(str(exc))
    upstream = httpx.URL(
        scheme="http",
        host=target.host,
        port=target.port,
        path=prefix + path,
        query=request.url.query.encode(),
    )
    headers = _passed_on(request.headers.items(), target)
    if "accept-encoding" not in request.headers:
        # The bytes are passed on as the task sends them: a client that asked for no encoding
        # gets none (httpx would otherwise ask for gzip on its behalf).
        headers.append(("accept-encoding", "identity"))
    client = proxy_client(request.app)
    has_body = request.method not in ("GET", "HEAD", "OPTIONS")
    sent = client.build_request(
        request.method,
        upstream,
        headers=headers,
        content=_body(request) if has_body else None,
    )
    try:
        answer = await client.send(sent, stream=True)
    except httpx.ConnectError:
        return unavailable(_not_listening(target, task_id))
    except httpx.TimeoutException:
        return JSONResponse(
            {"error": {"type": "Timeout", "message": f"task {task_id} did not answer in time"}},
            status_code=504,
        )
    response = StreamingResponse(
        answer.aiter_raw(), status_code=answer.status_code, background=BackgroundTask(answer.aclose)
    )
    # Every header as sent, repeated ones (set-cookie) too, less the hop-by-hop ones and any
    # cookie of the master's.
    response.raw_headers = [
        (k.lower(), v)
        for k, v in answer.headers.raw
        if k.decode("latin-1").lower() not in _HOP | _OWN and not _sets_masters_cookie(k, v)
    ]
    return response


def _passed_on(headers: Iterable[tuple[str, str]], target: ProxyTarget) -> list[tuple[str, str]]:
    """The client's headers the task gets (no hop-by-hop or private one), and the target's."""
    kept = [(k, v) for k, v in headers if k.lower() not in _HOP and k.lower() not in _PRIVATE]
    return kept + list(target.headers)


def _not_listening(target: ProxyTarget, task_id: int) -> str:
    return (
        f"{target.what} is not listening yet at {target.host}:{target.port}; try again shortly "
        f"(`assay task logs {task_id}` shows its output)"
    )


@router.websocket("/proxy/{task_id}/{path:path}")
async def proxy_socket(ws: WebSocket, task_id: TaskId, path: str) -> None:
    """A WebSocket to the task (a notebook's kernels and terminals), after the same checks as
    a request; the messages pass both ways as they are, and either side's close ends both."""
    master: Master = ws.app.state.master
    token = bearer_token(ws.headers.get("authorization")) or ws.cookies.get(COOKIE)
    try:
        actor = await master.users.authenticate(token)
        target = await master.tasks.proxy_target(actor, task_id)
    except AssayError as exc:
        # Before accepting: the handshake is answered with the error's status and shape.
        await deny(ws, JSONResponse(exc.to_json(), status_code=exc.status))
        return
    url = f"ws://{target.host}:{target.port}/proxy/{task_id}/{path}"
    if ws.url.query:
        url += f"?{ws.url.query}"
    wanted = ws.scope.get("subprotocols") or []
    skip = (
        _HOP
        | _PRIVATE
        | {
            "sec-websocket-key",
            "sec-websocket-version",
            "sec-websocket-extensions",
            "sec-websocket-protocol",
        }
    )
    headers = [(k, v) for k, v in ws.headers.items() if k.lower() not in skip]
    try:
        upstream = await websockets.connect(
            url,
            additional_headers=headers + list(target.headers),
            subprotocols=[Subprotocol(p) for p in wanted] or None,
            max_size=None,
            open_timeout=_TIMEOUT.connect,
        )
    except (OSError, websockets.InvalidHandshake, TimeoutError) as exc:
        await deny(ws, unavailable(f"{_not_listening(target, task_id)}: {exc}"))
        return
    async with upstream:
        await ws.accept(subprotocol=upstream.subprotocol)
        await _pump(ws, upstream)


async def deny(ws: WebSocket, answer: Response) -> None:
    """Refuse the handshake with ``answer`` (its status and error shape) where the server can
    send one, else with a close saying the same."""
    if "websocket.http.response" in ws.scope.get("extensions", {}):
        await ws.send_denial_response(answer)
        return
    await ws.close(code=1008, reason=bytes(answer.body)[:120].decode(errors="replace"))


async def _pump(ws: WebSocket, upstream: websockets.ClientConnection) -> None:
    async def down() -> None:
        async for message in upstream:
            if isinstance(message, bytes):
                await ws.send_bytes(message)
            else:
                await ws.send_text(message)

    async def up() -> None:
        while True:
            message = await ws.receive()
            if message["type"] == "websocket.disconnect":
                return
            if message.get("bytes") is not None:
                await upstream.send(message["bytes"])
            elif message.get("text") is not None:
                await upstream.send(message["text"])

    try:
        await both_ways(ws, down(), up())
    finally:
        await upstream.close()


async def both_ways(ws: WebSocket, *directions: Coroutine[Any, Any, None]) -> None:
    """Run each direction of a relay until one ends (a side closed), then end the others and
    close the client's socket."""
    running = [asyncio.create_task(d) for d in directions]
    try:
        await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        # The client has gone already: its end is how a session normally ends (ssh exits).
        with contextlib.suppress(RuntimeError, WebSocketDisconnect):
            await ws.close()


def _sets_masters_cookie(name: bytes, value: bytes) -> bool:
    """Whether a header of the task's answer sets a cookie of the master's."""
    if name.lower() != b"set-cookie":
        return False
    cookie = value.split(b";", 1)[0].split(b"=", 1)[0].strip().decode("latin-1")
    return cookie in _MASTERS_COOKIES


async def _body(request: Request) -> AsyncIterator[bytes]:
    async for chunk in request.stream():
        yield chunk


def unavailable(message: str) -> JSONResponse:
    error = Unavailable(message)
    return JSONResponse(error.to_json(), status_code=error.status, headers={"Retry-After": "2"})
