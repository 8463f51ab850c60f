"""Users: who signs in, and whether they may administer the cluster."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from assay.db._models import User
from assay.errors import Conflict, NotFound


def count(session: Session) -> int:
    return int(session.scalar(select(func.count()).select_from(User)) or 0)


def named(session: Session, username: str) -> User | None:
    return session.scalars(select(User).where(User.username == username)).first()


def get(session: Session, user_id: int) -> User | None:
    return session.get(User, user_id)


def require(session: Session, username: str) -> User:
    """The user called ``username``, or :class:`NotFound`."""
    user = named(session, username)
    if user is None:
        raise NotFound(f"no user called {username!r} (see `assay user list`)")
    return user


def create(
    session: Session,
    *,
    username: str,
    password_hash: str,
    admin: bool,
    now: float,
    det_password_hash: str | None = None,
) -> User:
    """A new active user; :class:`Conflict` when the name is taken. ``det_password_hash``:
    the hash Determined's clients sign in against (see :func:`set_det_password`)."""
    if named(session, username) is not None:
        raise Conflict(f"a user called {username!r} already exists")
    user = User(
        username=username,
        password_hash=password_hash,
        det_password_hash=det_password_hash,
        admin=admin,
        active=True,
        created_at=now,
    )
    session.add(user)
    session.flush()
    return user


def update(
    session: Session, user: User, *, admin: bool | None = None, active: bool | None = None
) -> None:
    """Whether the user administers the cluster, and whether they may sign in (each given)."""
    if admin is not None:
        user.admin = admin
    if active is not None:
        user.active = active


def set_password(
    session: Session, user: User, *, password_hash: str, det_password_hash: str | None = None
) -> None:
    """The user signs in with a new password (its hashes, never the password itself): assay's
    and the one Determined's clients sign in against (None: none yet; the old one, of the old
    password, goes either way)."""
    user.password_hash = password_hash
    user.det_password_hash = det_password_hash


def set_det_password(session: Session, user: User, *, det_password_hash: str) -> None:
    """The hash Determined's clients sign in against, for a user whose password predates it
    (an argon2 hash of their salted SHA-512, never anything weaker)."""
    user.det_password_hash = det_password_hash


def everyone(session: Session) -> Sequence[User]:
    return session.scalars(select(User).order_by(User.id)).all()
