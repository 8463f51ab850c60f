"""Users and their tokens: signing in, who a request comes from, and who may change what.

Passwords are hashed with argon2id off the event loop; tokens are random, shown once, and
stored only as SHA-256 digests. Every write is one transaction.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import secrets
from dataclasses import dataclass

from assay import rest
from assay.db import Session, User, tokens, users
from assay.errors import Conflict, Forbidden, NotFound, Unauthorized
from assay.master.identity._determined import not_yet_for_determined, user_list, user_view
from assay.master.identity._passwords import (
    decoy_hash,
    hash_both,
    hash_for_determined,
    verify_password,
)
from assay.master.kernel import Orchestrator, Tx, views
from assay.rest import determined as det

log = logging.getLogger(__name__)

ADMIN = "admin"
"""The user made on a master's first start."""

SESSION_DAYS = 30
"""How long a sign-in lasts."""

TOKEN_PREFIX = "assay_"
"""Starts every token, so that secret scanners and people recognise a leaked one."""

_DAY = 86400.0


ONE_TIME_SECONDS = 600.0
"""How long a one-time sign-in token (the link ``assay up`` prints) may be exchanged."""


class TokenKind:
    SESSION = "session"
    ACCESS = "access"
    ONE_TIME = "one-time"
    """Good only for one exchange for a session (``exchange_one_time``), never as a bearer."""


@dataclass(frozen=True)
class Actor:
    """Who a request comes from: a user, through one of their tokens."""

    user_id: int
    username: str
    admin: bool
    token_id: int

    def may_change(self, owner: str) -> bool:
        return self.admin or owner == self.username

    def require_owner(self, owner: str, what: str) -> None:
        """Raise :class:`Forbidden` unless this actor owns ``what`` or is an admin."""
        if not self.may_change(owner):
            raise Forbidden(
                f"{what} belongs to {owner}; only its owner or an admin may change it "
                f"(you are signed in as {self.username})"
            )


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


class UserService:
    def __init__(self, core: Orchestrator) -> None:
        self.core = core

    async def ensure_admin(self, password: str | None) -> str | None:
        """Make the ``admin`` user when there are no users yet, with ``password`` or a random
        one; the random one is returned (to be shown once), None otherwise."""
        if await self.core.read(users.count):
            return None  # hashing costs a start time; the handler checks again under the lock
        chosen = password or secrets.token_urlsafe(12)
        hashed, det_hashed = await asyncio.to_thread(hash_both, chosen)

        def handler(tx: Tx) -> bool:
            if users.count(tx.session):
                return False
            users.create(
                tx.session,
                username=ADMIN,
                password_hash=hashed,
                det_password_hash=det_hashed,
                admin=True,
                now=tx.now,
            )
            return True

        made = await self.core.transact(handler)
        return chosen if made and not password else None

    async def authenticate(self, token: str | None) -> Actor:
        """The actor a bearer token signs in, or :class:`Unauthorized`."""
        if not token:
            raise Unauthorized(
                "sign in first: `assay user login`, or send an access token as "
                "`Authorization: Bearer <token>`"
            )
        key, now = digest(token), self.core.clock()

        def read(session: Session) -> Actor | None:
            found = tokens.live_holder(session, key, now)
            if found is None or found[0].kind == TokenKind.ONE_TIME:
                return None
            row, user = found
            return Actor(user_id=user.id, username=user.username, admin=user.admin, token_id=row.id)

        actor = await self.core.read(read)
        if actor is None:
            raise Unauthorized(
                "the token is not valid (expired, revoked, or its user is deactivated); "
                "sign in again with `assay user login`"
            )
        return actor

    async def login(self, username: str, password: str) -> rest.Session:
        """A new session for the user, or :class:`Unauthorized` naming neither which part
        was wrong nor whether the user exists."""

        found = await self.core.read(lambda s: _signing_in(s, username))
        stored = found.password_hash if found is not None else decoy_hash()
        good = await asyncio.to_thread(verify_password, stored, password)
        if found is None or not good:
            raise Unauthorized("wrong user name or password, or the user is deactivated")
        # A user whose password predates Determined's sign-in gets its hash now, from the
        # password just proven: the only moment the master holds it.
        det_hashed = None
        if found.det_password_hash is None:
            det_hashed = await asyncio.to_thread(hash_for_determined, password)
        token = _new_token()

        def handler(tx: Tx) -> rest.Session:
            user = _still_active(tx, found.id)
            if det_hashed is not None and user.det_password_hash is None:
                users.set_det_password(tx.session, user, det_password_hash=det_hashed)
            expires = _start_session(tx, user, token, "signed in")
            return rest.Session(token=token, user=views.user(user), expires_at=expires)

        return await self.core.transact(handler)

    async def login_determined(self, body: det.Login) -> det.LoginResponse:
        """A new session for a Determined client (``det user login``): ``body.password`` is
        the client's salted SHA-512 of the password when ``is_hashed`` (checked against the
        argon2 hash kept of it), else the password itself (checked as :meth:`login` checks
        it). :class:`Unauthorized` names neither which part was wrong nor whether the user
        exists; a user whose password predates the hash Determined's clients need is told to
        sign in once with assay (:class:`Conflict`)."""
        found = await self.core.read(lambda s: _signing_in(s, body.username))
        det_hashed = None
        if body.is_hashed:
            if found is not None and found.det_password_hash is None:
                raise Conflict(not_yet_for_determined(body.username))
            stored = found.det_password_hash if found is not None else None
            good = await asyncio.to_thread(verify_password, stored or decoy_hash(), body.password)
        else:
            stored = found.password_hash if found is not None else None
            good = await asyncio.to_thread(verify_password, stored or decoy_hash(), body.password)
            if good and found is not None and found.det_password_hash is None:
                det_hashed = await asyncio.to_thread(hash_for_determined, body.password)
        if found is None or not good:
            raise Unauthorized(
                "invalid credentials: wrong user name or password, or the user is deactivated"
            )
        token = _new_token()

        def handler(tx: Tx) -> det.LoginResponse:
            user = _still_active(tx, found.id)
            if det_hashed is not None and user.det_password_hash is None:
                users.set_det_password(tx.session, user, det_password_hash=det_hashed)
            _start_session(tx, user, token, "signed in with Determined's client")
            return det.LoginResponse(token=token, user=user_view(user))

        return await self.core.transact(handler)

    async def create_one_time(self, actor: Actor) -> rest.OneTimeToken:
        """A one-time sign-in token for ``actor``'s user, good for one exchange within
        ``ONE_TIME_SECONDS``. Stored as a digest like every token, so it survives a restart of
        the master until it expires."""
        token = _new_token()

        def handler(tx: Tx) -> rest.OneTimeToken:
            expires = tx.now + ONE_TIME_SECONDS
            tokens.create(
                tx.session,
                user_id=actor.user_id,
                digest=digest(token),
                kind=TokenKind.ONE_TIME,
                description="one-time sign-in",
                now=tx.now,
                expires_at=expires,
            )
            return rest.OneTimeToken(token=token, expires_at=expires)

        return await self.core.transact(handler)

    async def exchange_one_time(self, token: str) -> rest.Session:
        """A new session for the user of a one-time token, which is spent by it; a token
        spent, expired, revoked or unknown is :class:`Unauthorized`. Under the master's lock,
        so two exchanges of one token cannot both succeed."""
        session_token = _new_token()

        def handler(tx: Tx) -> rest.Session:
            found = tokens.live_holder(tx.session, digest(token), tx.now)
            if found is None or found[0].kind != TokenKind.ONE_TIME:
                raise Unauthorized(
                    "the sign-in link is not valid (used already, expired, or unknown); "
                    "run `assay up` again for a new one, or sign in with a password"
                )
            row, user = found
            tokens.revoke(tx.session, row, at=tx.now)
            expires = tx.now + SESSION_DAYS * _DAY
            tokens.create(
                tx.session,
                user_id=user.id,
                digest=digest(session_token),
                kind=TokenKind.SESSION,
                description="signed in with a one-time link",
                now=tx.now,
                expires_at=expires,
            )
            return rest.Session(token=session_token, user=views.user(user), expires_at=expires)

        return await self.core.transact(handler)

    async def logout(self, actor: Actor) -> None:
        def handler(tx: Tx) -> None:
            row = tokens.get(tx.session, actor.token_id)
            if row is not None:
                tokens.revoke(tx.session, row, at=tx.now)

        await self.core.transact(handler)

    async def me(self, actor: Actor) -> rest.User:
        return await self.core.read(lambda s: views.user(users.require(s, actor.username)))

    async def list(self) -> rest.UserList:
        return await self.core.read(
            lambda s: rest.UserList(users=[views.user(u) for u in users.everyone(s)])
        )

    async def determined_me(self, actor: Actor) -> det.UserResponse:
        """The signed-in user, as Determined's ``GET /api/v1/me`` answers."""
        return await self.core.read(
            lambda s: det.UserResponse(user=user_view(users.require(s, actor.username)))
        )

    async def determined_user(self, user_id: int) -> det.UserResponse:
        """One user by id, as Determined's ``GET /api/v1/users/{userId}`` answers."""

        def read(session: Session) -> det.UserResponse:
            user = users.get(session, user_id)
            if user is None:
                raise NotFound(f"user {user_id} not found (see `det user list`)")
            return det.UserResponse(user=user_view(user))

        return await self.core.read(read)

    async def determined_user_named(self, username: str) -> det.UserResponse:
        """One user by name, as Determined's ``GET /api/v1/users/{username}/by-username``
        answers."""
        return await self.core.read(
            lambda s: det.UserResponse(user=user_view(users.require(s, username)))
        )

    async def determined_users(
        self,
        *,
        active: bool | None = None,
        admin: bool | None = None,
        name: str | None = None,
        offset: int = 0,
        limit: int = 0,
    ) -> det.UserList:
        """Users as Determined's ``GET /api/v1/users`` lists them: those matching every filter
        given, by id, the page from ``offset`` of ``limit`` (0: all)."""
        return await self.core.read(
            lambda s: user_list(
                users.everyone(s),
                active=active,
                admin=admin,
                name=name,
                offset=offset,
                limit=limit,
            )
        )

    async def create(self, actor: Actor, body: rest.UserCreate) -> rest.User:
        if not actor.admin:
            raise Forbidden("only an admin may create users")
        hashed, det_hashed = await asyncio.to_thread(hash_both, body.password)

        def handler(tx: Tx) -> rest.User:
            made = users.create(
                tx.session,
                username=body.username,
                password_hash=hashed,
                det_password_hash=det_hashed,
                admin=body.admin,
                now=tx.now,
            )
            log.info("%s created user %s%s", actor.username, made.username, _admin(made))
            return views.user(made)

        return await self.core.transact(handler)

    async def change(self, actor: Actor, username: str, body: rest.UserChange) -> rest.User:
        """Apply every field given, or none when one is refused."""
        own = username == actor.username
        if not actor.admin and (not own or body.admin is not None or body.active is not None):
            raise Forbidden(
                "only an admin may change another user, or whether a user is an admin or active"
            )
        hashed = None
        if body.password is not None:
            hashed = await asyncio.to_thread(hash_both, body.password)

        def handler(tx: Tx) -> rest.User:
            user = users.require(tx.session, username)
            demoted = body.admin is False or body.active is False
            if demoted and user.admin and user.active and _last_admin(tx.session, user):
                raise Conflict(
                    f"{username} is the only active admin; make another user an admin first"
                )
            users.update(tx.session, user, admin=body.admin, active=body.active)
            if body.active is False:
                # Every sign-in and access token ends here: activating the user again gives
                # back none of them (they sign in again and make new tokens).
                tokens.revoke_all(tx.session, user.id, tx.now)
            if hashed is not None:
                users.set_password(
                    tx.session, user, password_hash=hashed[0], det_password_hash=hashed[1]
                )
                # Whoever knew the old password is signed out; the caller's own session stays.
                tokens.revoke_others(
                    tx.session,
                    user_id=user.id,
                    kind=TokenKind.SESSION,
                    keep=actor.token_id,
                    at=tx.now,
                )
            return views.user(user)

        return await self.core.transact(handler)

    async def create_token(self, actor: Actor, body: rest.TokenCreate) -> rest.NewAccessToken:
        token = _new_token()

        def handler(tx: Tx) -> rest.NewAccessToken:
            days = body.lifespan_days
            row = tokens.create(
                tx.session,
                user_id=actor.user_id,
                digest=digest(token),
                kind=TokenKind.ACCESS,
                description=body.description,
                now=tx.now,
                expires_at=tx.now + days * _DAY if days else None,
            )
            return rest.NewAccessToken(token=token, info=views.access_token(row, actor.username))

        return await self.core.transact(handler)

    async def tokens(
        self, actor: Actor, *, everyone: bool, kind: str | None
    ) -> rest.AccessTokenList:
        if everyone and not actor.admin:
            raise Forbidden("only an admin may list every user's tokens")

        def read(session: Session) -> rest.AccessTokenList:
            rows = tokens.listed(session, user_id=None if everyone else actor.user_id, kind=kind)
            return rest.AccessTokenList(tokens=[views.access_token(t, n) for t, n in rows])

        return await self.core.read(read)

    async def revoke_token(self, actor: Actor, token_id: int) -> rest.AccessToken:
        def handler(tx: Tx) -> rest.AccessToken:
            row = tokens.require(tx.session, token_id)
            owner = users.get(tx.session, row.user_id)
            name = owner.username if owner is not None else "?"
            actor.require_owner(name, f"token {token_id}")
            tokens.revoke(tx.session, row, at=tx.now)
            return views.access_token(row, name)

        return await self.core.transact(handler)


@dataclass(frozen=True)
class _SigningIn:
    """What a sign-in checks of an active user, read before hashing (off the lock)."""

    id: int
    password_hash: str
    det_password_hash: str | None


def _signing_in(session: Session, username: str) -> _SigningIn | None:
    """The active user called ``username`` as a sign-in checks them; None when there is none."""
    user = users.named(session, username)
    if user is None or not user.active:
        return None
    return _SigningIn(user.id, user.password_hash, user.det_password_hash)


def _still_active(tx: Tx, user_id: int) -> User:
    """The user a sign-in checked, unless they were deactivated (or deleted) meanwhile."""
    user = users.get(tx.session, user_id)
    if user is None or not user.active:
        raise Unauthorized("wrong user name or password, or the user is deactivated")
    return user


def _start_session(tx: Tx, user: User, token: str, description: str) -> float:
    """Record ``token`` as a new session of ``user``; when it expires."""
    expires = tx.now + SESSION_DAYS * _DAY
    tokens.create(
        tx.session,
        user_id=user.id,
        digest=digest(token),
        kind=TokenKind.SESSION,
        description=description,
        now=tx.now,
        expires_at=expires,
    )
    return expires


def _admin(user: User) -> str:
    return " (admin)" if user.admin else ""


def _last_admin(session: Session, user: User) -> bool:
    return not any(u.admin and u.active and u.id != user.id for u in users.everyone(session))
