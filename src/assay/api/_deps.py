"""Dependencies shared by the routes: the master, who a request comes from (a user's token, a
trial process's allocation token, or an agent's token), and the integer path parameters
(bounded, so an id the database cannot hold is a 400, not a crash)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Cookie, Depends, Header, Path, Query, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from assay import rest
from assay.errors import Unauthorized
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


async def current_user(master: MasterDep, credentials: Credentials) -> Actor:
    """The signed-in user, or 401."""
    return await master.users.authenticate(credentials.credentials if credentials else None)


async def reader(master: MasterDep, token: TokenDep) -> Actor | Caller:
    """A signed-in user, or a trial process by its allocation's token (whose reads the master
    scopes to its own trial and experiment); else 401."""
    try:
        return await master.harness.caller(token)
    except Unauthorized:
        return await master.users.authenticate(token)


SESSION_COOKIE = "assay_session"
"""The cookie a browser holds its session token in (set by ``POST /api/v1/auth/one-time``)."""


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

    Only read-only GET streams take a token this way: a cookie is sent by the browser on its
    own, so nothing that changes state may trust one (cross-site requests), and a token in a
    URL may be kept in histories, so a header is preferred wherever a client can send one."""
    given = credentials.credentials if credentials else token or cookie
    return await master.users.authenticate(given)


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
