"""``/api/v1/auth``, ``/api/v1/users`` and ``/api/v1/tokens``: signing in and out, users, and
access tokens for scripts."""

from __future__ import annotations

import math
import time
from typing import Annotated, Literal

from fastapi import APIRouter, Path, Query, Request, Response

from assay import rest
from assay.api._deps import (
    CSRF_HEADER,
    SESSION_COOKIE,
    SESSION_COOKIE_PATH,
    SIGNED_IN,
    ActorDep,
    MasterDep,
    require_csrf_header,
)
from assay.api._ratelimit import RateLimiter
from assay.errors import TooManyRequests

router = APIRouter(prefix="/api/v1", tags=["users"])
signed_in = APIRouter(prefix="/api/v1", tags=["users"], dependencies=SIGNED_IN)

Username = Annotated[str, Path(max_length=64, pattern=rest.USERNAME_PATTERN)]
TokenId = Annotated[int, Path(ge=0, le=rest.INT_MAX, description="A token's id.")]


class LoginLimits:
    """How often one address may try to sign in: ten times a minute as one user (password
    guessing), three hundred as anyone (each try costs the master an argon2 hash)."""

    def __init__(self) -> None:
        self.per_user = RateLimiter(10, 60.0, time.monotonic)
        self.per_address = RateLimiter(300, 60.0, time.monotonic)

    def check(self, address: str, username: str) -> None:
        for limiter, key in ((self.per_user, f"{address} {username}"), (self.per_address, address)):
            if not limiter.allow(key):
                wait = max(1, math.ceil(limiter.retry_after(key)))
                raise TooManyRequests(f"too many sign-in attempts; try again in {wait}s")


@router.post("/auth/login", responses={429: {"description": "Too many attempts; wait."}})
async def login(body: rest.Login, master: MasterDep, request: Request) -> rest.Session:
    """A session token for the user: send it as ``Authorization: Bearer <token>``."""
    limits: LoginLimits = request.app.state.login_limits
    limits.check(request.client.host if request.client else "", body.username)
    return await master.users.login(body.username, body.password)


@router.post(
    "/auth/browser-login",
    responses={
        403: {"description": f"No `{CSRF_HEADER}` header."},
        429: {"description": "Too many attempts; wait."},
    },
)
async def browser_login(
    body: rest.Login, master: MasterDep, request: Request, response: Response
) -> rest.BrowserSession:
    """Sign a browser in: the session token is set as the ``assay_session`` cookie (HttpOnly,
    SameSite=Strict, path ``/api/``) and is not in the answer, so no script of a page ever has
    it. The request must carry the ``X-Assay-CSRF`` header, as every state-changing request
    signed in by the cookie must."""
    require_csrf_header(request)
    limits: LoginLimits = request.app.state.login_limits
    limits.check(request.client.host if request.client else "", body.username)
    session = await master.users.login(body.username, body.password)
    return browser_session(response, request, session)


@router.post(
    "/auth/one-time",
    responses={
        403: {"description": f"No `{CSRF_HEADER}` header."},
        429: {"description": "Too many attempts; wait."},
    },
)
async def one_time_sign_in(
    body: rest.OneTimeSignIn, master: MasterDep, request: Request, response: Response
) -> rest.BrowserSession:
    """Exchange a one-time sign-in token (the ``#token=`` of the link ``assay up`` prints, which
    never reaches a server) for a browser's session, set as the ``assay_session`` cookie as
    ``POST /api/v1/auth/browser-login`` does. The token is spent: a second exchange is
    refused."""
    require_csrf_header(request)
    limits: LoginLimits = request.app.state.login_limits
    limits.check(request.client.host if request.client else "", "one-time")
    session = await master.users.exchange_one_time(body.token)
    return browser_session(response, request, session)


def browser_session(
    response: Response, request: Request, session: rest.Session
) -> rest.BrowserSession:
    """Set ``session``'s token as the browser's cookie; the answer without it."""
    max_age = None
    if session.expires_at is not None:
        max_age = max(0, int(session.expires_at - time.time()))
    response.set_cookie(
        SESSION_COOKIE,
        session.token,
        max_age=max_age,
        path=SESSION_COOKIE_PATH,
        secure=request.url.scheme == "https",
        httponly=True,
        samesite="strict",
    )
    return rest.BrowserSession(user=session.user, expires_at=session.expires_at)


@signed_in.post("/auth/one-time-tokens", status_code=201)
async def create_one_time_token(master: MasterDep, actor: ActorDep) -> rest.OneTimeToken:
    """A one-time sign-in token of the signed-in user, for a browser link (``/#token=...``:
    in the fragment, which a browser never sends): good for one exchange at
    ``POST /api/v1/auth/one-time`` within ten minutes."""
    return await master.users.create_one_time(actor)


@signed_in.post("/auth/logout", status_code=204)
async def logout(master: MasterDep, actor: ActorDep, request: Request, response: Response) -> None:
    """End the session (or revoke the access token) the request is signed in with; a
    browser's session cookie is cleared."""
    await master.users.logout(actor)
    response.delete_cookie(
        SESSION_COOKIE,
        path=SESSION_COOKIE_PATH,
        secure=request.url.scheme == "https",
        httponly=True,
        samesite="strict",
    )


@signed_in.get("/me")
async def me(master: MasterDep, actor: ActorDep) -> rest.User:
    return await master.users.me(actor)


@signed_in.get("/users")
async def list_users(master: MasterDep) -> rest.UserList:
    return await master.users.list()


@signed_in.post("/users", status_code=201)
async def create_user(body: rest.UserCreate, master: MasterDep, actor: ActorDep) -> rest.User:
    """Admins only."""
    return await master.users.create(actor, body)


@signed_in.patch("/users/{username}")
async def change_user(
    username: Username, body: rest.UserChange, master: MasterDep, actor: ActorDep
) -> rest.User:
    """A user may change their own password; an admin anything of anyone."""
    return await master.users.change(actor, username, body)


@signed_in.post("/tokens", status_code=201)
async def create_token(
    body: rest.TokenCreate, master: MasterDep, actor: ActorDep
) -> rest.NewAccessToken:
    """A long-lived access token of the signed-in user; the token is shown only here."""
    return await master.users.create_token(actor, body)


@signed_in.get("/tokens")
async def list_tokens(
    master: MasterDep,
    actor: ActorDep,
    all_users: Annotated[bool, Query(description="Every user's (admins only).")] = False,
    kind: Literal["access", "session"] | None = "access",
) -> rest.AccessTokenList:
    return await master.users.tokens(actor, everyone=all_users, kind=kind)


@signed_in.delete("/tokens/{token_id}")
async def revoke_token(token_id: TokenId, master: MasterDep, actor: ActorDep) -> rest.AccessToken:
    """Revoke one of the user's tokens (an admin: anyone's); the token as revoked."""
    return await master.users.revoke_token(actor, token_id)
