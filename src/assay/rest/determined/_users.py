"""Users and signing in, as Determined's clients send and read them (``v1User``,
``v1LoginRequest``, ``v1GetUsersResponse``...)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from assay.rest.determined._common import DetRequest, DetResource, Pagination


class AgentUserGroup(DetResource):
    """Whom a user's tasks run as on the agents (assay runs them as the agent's own user)."""

    agent_uid: int | None = None
    agent_gid: int | None = None
    agent_user: str | None = None
    agent_group: str | None = None


class User(DetResource):
    """``v1User``."""

    id: int
    username: str
    admin: bool
    active: bool
    display_name: str = ""
    remote: bool = Field(default=False, description="assay signs every user in by password.")
    agent_user_group: AgentUserGroup | None = None
    modified_at: str | None = Field(default=None, description="RFC 3339, UTC.")
    last_auth_at: str | None = None


class Login(DetRequest):
    """``POST /api/v1/auth/login``: with ``isHashed``, ``password`` is what
    :func:`~assay.rest.determined.client_hash` makes of the password (Determined's CLI and SDK
    send that); without it, the password itself."""

    username: Annotated[str, Field(min_length=1, max_length=64)]
    password: Annotated[str, Field(max_length=256)]
    is_hashed: bool = False


class LoginResponse(DetResource):
    """A session: the client sends ``token`` as ``Authorization: Bearer <token>``."""

    token: str
    user: User


class LogoutResponse(DetResource):
    """``POST /api/v1/auth/logout`` answers an empty object."""


class UserResponse(DetResource):
    """One user: ``GET /api/v1/me`` (``v1GetMeResponse``), ``GET /api/v1/users/{userId}``
    and ``GET /api/v1/users/{username}/by-username`` all answer this shape."""

    user: User


class UserList(DetResource):
    """``GET /api/v1/users`` (``v1GetUsersResponse``)."""

    users: list[User]
    pagination: Pagination
