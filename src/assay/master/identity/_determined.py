"""Users as Determined's clients see them: ``v1User`` views of the rows, the lists its
``GET /api/v1/users`` pages, and why a sign-in by its client-side hash may be refused."""

from __future__ import annotations

from collections.abc import Sequence

from assay.db import User
from assay.rest import determined as det


def user_view(user: User) -> det.User:
    """``user`` as a ``v1User``: a local user (never remote) whose tasks run as the agent's
    own user."""
    return det.User(
        id=user.id,
        username=user.username,
        admin=user.admin,
        active=user.active,
        modified_at=det.timestamp(user.created_at),
    )


def user_list(
    rows: Sequence[User],
    *,
    active: bool | None,
    admin: bool | None,
    name: str | None,
    offset: int,
    limit: int,
) -> det.UserList:
    """The users matching every filter given (``name``: part of the user name, in any case),
    by id, paged as Determined's master pages a list."""
    wanted = (name or "").lower()
    matching = [
        u
        for u in rows
        if (active is None or u.active == active)
        and (admin is None or u.admin == admin)
        and wanted in u.username.lower()
    ]
    page = det.paginate(len(matching), offset, limit)
    shown = matching[page.start_index : page.end_index]
    return det.UserList(users=[user_view(u) for u in shown], pagination=page)


def not_yet_for_determined(username: str) -> str:
    """Why ``username`` cannot sign in with Determined's client-side hash yet, and what to do."""
    return (
        f"{username} has no password Determined's clients can sign in with yet: their password "
        f"was set before this master spoke to them; sign in once with `assay user login "
        f"{username}` (or have an admin set the password), then `det user login` works"
    )
