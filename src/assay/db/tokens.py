"""Tokens: what a signed-in user presents, stored as digests."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session

from assay.db._models import Token, User
from assay.errors import NotFound


def create(
    session: Session,
    *,
    user_id: int,
    digest: str,
    kind: str,
    description: str,
    now: float,
    expires_at: float | None,
) -> Token:
    row = Token(
        user_id=user_id,
        digest=digest,
        kind=kind,
        description=description,
        created_at=now,
        expires_at=expires_at,
    )
    session.add(row)
    session.flush()
    return row


def live_holder(session: Session, digest: str, now: float) -> tuple[Token, User] | None:
    """The unrevoked, unexpired token with this digest and its active user, if any."""
    found = session.execute(
        select(Token, User)
        .join(User, User.id == Token.user_id)
        .where(
            Token.digest == digest,
            Token.revoked_at.is_(None),
            or_(Token.expires_at.is_(None), Token.expires_at > now),
            User.active.is_(True),
        )
    ).first()
    return (found[0], found[1]) if found is not None else None


def get(session: Session, token_id: int) -> Token | None:
    return session.get(Token, token_id)


def require(session: Session, token_id: int) -> Token:
    row = session.get(Token, token_id)
    if row is None:
        raise NotFound(f"token {token_id} not found (see `assay token list`)")
    return row


def listed(
    session: Session, *, user_id: int | None, kind: str | None
) -> Sequence[tuple[Token, str]]:
    """Tokens with their owners' names, newest first; only ``user_id``'s when given."""
    query = select(Token, User.username).join(User, User.id == Token.user_id)
    if user_id is not None:
        query = query.where(Token.user_id == user_id)
    if kind is not None:
        query = query.where(Token.kind == kind)
    return [(t, name) for t, name in session.execute(query.order_by(Token.id.desc())).all()]


def revoke(session: Session, token: Token, *, at: float) -> None:
    """The token stops signing anyone in from ``at`` (one revoked before keeps its time)."""
    if token.revoked_at is None:
        token.revoked_at = at


def revoke_others(session: Session, *, user_id: int, kind: str, keep: int, at: float) -> None:
    """Every live token of ``kind`` of the user ends ``at``, but ``keep`` (the caller's own)."""
    for token, _name in listed(session, user_id=user_id, kind=kind):
        if token.revoked_at is None and token.id != keep:
            token.revoked_at = at


def revoke_all(session: Session, user_id: int, now: float) -> None:
    """Every live token of the user ends now (a deactivated user or a changed password)."""
    session.execute(
        update(Token)
        .where(Token.user_id == user_id, Token.revoked_at.is_(None))
        .values(revoked_at=now)
    )
