"""Dependencies shared by the routes: the master, who a request comes from (a user's token, a
browser's session cookie, a trial process's allocation token, or an agent's token), and the
integer path parameters (bounded, so an id the database cannot hold is a 400, not a crash).

A browser is signed in by the ``assay_session`` cookie (HttpOnly, SameSite=Strict, path
``/api/``): no script of a page reads it, and proxied apps (``/proxy/``) never receive it. The
browser sends a cookie on its own, so a request that may change state and is signed in by the
cookie must also carry the :data:`CSRF_HEADER` the web UI sends: a page of another origin
cannot add a custom header without the master's leave (which CORS never gives), and the
``Origin`` check (``_guard.py``) stands beside it."""

from __future__ import annotations

from typing import Annotated

from fastapi import Cookie, Depends, Header, Path, Query, Request
from fastapi.security import APIKeyCookie, HTTPAuthorizationCredentials, HTTPBearer

from assay import rest
from assay.api._guard import SAFE_METHODS
from assay.errors import AssayError, Forbidden, Unauthorized
from assay.master import Actor, Caller, Master


def get_master(request: Request) -> Master:
    master: Master = request.app.state.master
    return master


def bearer_token(authorization: Annotated[str | None, Header()] = None) -> str | None:
    if authorization and authorization.lower().startswith("bearer "):
        return authorization[7:].strip()
    return None


MasterDep = Annotated[Master, Depends(get_master)]
TokenDep = Annotated[str | None, Depends(bearer_token)]

_user_bearer = HTTPBearer(
    auto_error=False,
    scheme_name="UserToken",
    description="A session token from `POST /api/v1/auth/login`, or an access token "
    "(`assay token create`).",
)
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(_user_bearer)]

SESSION_COOKIE = "assay_session"
"""The cookie a browser holds its session token in (set by ``POST /api/v1/auth/browser-login``
and ``POST /api/v1/auth/one-time``)."""

SESSION_COOKIE_PATH = "/api/"
"""Where the browser sends the cookie: the API only, so no proxied app (``/proxy/``) or page
gets it."""

CSRF_HEADER = "X-Assay-CSRF"
"""The header (any value) a request signed in by the session cookie must carry to change state:
the web UI sends it with every request."""

_session_cookie = APIKeyCookie(
    name=SESSION_COOKIE,
    auto_error=False,
    scheme_name="SessionCookie",
    description="A browser's session (`POST /api/v1/auth/browser-login`), HttpOnly; a request "
    f"that changes state must also carry the `{CSRF_HEADER}` header.",
)
SessionCookie = Annotated[str | None, Depends(_session_cookie)]


def require_csrf_header(request: Request) -> None:
    """403 unless a state-changing request carries :data:`CSRF_HEADER`."""
    if request.method.upper() not in SAFE_METHODS and not request.headers.get(CSRF_HEADER):
        raise Forbidden(
            f"a {request.method} signed in by the browser's session cookie must carry the "
            f"{CSRF_HEADER} header, which the web UI sends; a program signs in with "
            "Authorization: Bearer <token> instead"
        )


async def _cookie_user(master: Master, request: Request, cookie: str) -> Actor:
    """The user the browser's session cookie signs in (:data:`CSRF_HEADER` required when the
    request may change state); or 401."""
    require_csrf_header(request)
    return await master.users.authenticate(cookie)


async def current_user(
    master: MasterDep, request: Request, credentials: Credentials, cookie: SessionCookie
) -> Actor:
    """The signed-in user: by the Authorization header, else by the browser's session cookie
    (with :data:`CSRF_HEADER` when the request may change state); or 401."""
    if credentials is None and cookie:
        return await _cookie_user(master, request, cookie)
    token = credentials.credentials if credentials else None
    try:
        return await master.users.authenticate(token)
    except Unauthorized:
        await refuse_trial_token(master, token)
        raise


async def refuse_trial_token(master: Master, token: str | None) -> None:
    """403 when ``token`` is a live trial's: it is known, but it never acts as a user (it
    reads its own experiment's checkpoints and best validation, and reports)."""
    if not token:
        return
    try:
        caller = await master.harness.caller(token)
    except AssayError:
        return  # no trial's either (or an ended one's): the user's refusal stands
    raise Forbidden(
        f"this is the token of trial {caller.trial_id}'s allocation: it reads only its own "
        "experiment's checkpoints and best validation, never what a user's token reads; sign "
        "in as a user for this"
    )


async def reader(
    master: MasterDep, request: Request, token: TokenDep, cookie: SessionCookie
) -> Actor | Caller:
    """A signed-in user (by a token, or a browser by its session cookie: a checkpoint's
    download link), or a trial process by its allocation's token (whose reads the master
    scopes to its own trial and experiment); else 401."""
    if token is None and cookie:
        return await _cookie_user(master, request, cookie)
    try:
        return await master.harness.caller(token)
    except Unauthorized:
        return await master.users.authenticate(token)


async def stream_user(
    master: MasterDep,
    credentials: Credentials,
    token: Annotated[
        str | None,
        Query(
            max_length=256,
            description="The session or access token, for clients that cannot send headers "
            "(a browser's EventSource); the `assay_session` cookie or the Authorization header "
            "do the same.",
        ),
    ] = None,
    cookie: Annotated[str | None, Cookie(alias=SESSION_COOKIE, include_in_schema=False)] = None,
) -> Actor:
    """The signed-in user of a streamed read (server-sent events): by the Authorization
    header, else the ``token`` query parameter, else the session cookie; or 401.

    Only read-only GET streams take a token in the URL, for clients that can send no header:
    a URL may be kept in histories and logs, so a header or the cookie is preferred wherever a
    client can use one (the web UI uses the cookie)."""
    given = credentials.credentials if credentials else token or cookie
    try:
        return await master.users.authenticate(given)
    except Unauthorized:
        await refuse_trial_token(master, given)
        raise


ActorDep = Annotated[Actor, Depends(current_user)]
ReaderDep = Annotated[Actor | Caller, Depends(reader)]
"""For routes that both users and trial processes read."""
SIGNED_IN = [Depends(current_user)]
"""For a router whose every route needs a signed-in user."""
STREAM_SIGNED_IN = [Depends(stream_user)]
"""For a read-only stream a browser opens with EventSource (no headers)."""

ExperimentId = Annotated[int, Path(ge=0, le=rest.INT_MAX, description="An experiment's id.")]
TrialId = Annotated[int, Path(ge=0, le=rest.INT_MAX, description="A trial's id.")]
ContextId = Annotated[int, Path(ge=0, le=rest.INT_MAX, description="A context's id.")]
