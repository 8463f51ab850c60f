"""Users, signing in, and access tokens."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from assay.rest._common import Request, Resource

USERNAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.@-]*$"

Username = Annotated[
    str,
    Field(
        min_length=1,
        max_length=64,
        pattern=USERNAME_PATTERN,
        description="Letters, digits and `_.@-`, starting with a letter or digit; at most 64.",
    ),
]
NewPassword = Annotated[
    str,
    Field(min_length=8, max_length=256, description="At least 8 characters, at most 256."),
]
Description = Annotated[str, Field(max_length=256, pattern=r"^[^\x00]*$")]

MAX_TOKEN_DAYS = 3650


class User(Resource):
    id: int
    username: str
    admin: bool = Field(description="Admins may act on every user's experiments and jobs.")
    active: bool = Field(description="An inactive user cannot sign in; their tokens stop.")
    created_at: float


class UserList(Resource):
    users: list[User]


class Login(Request):
    username: Annotated[str, Field(min_length=1, max_length=64)]
    password: Annotated[str, Field(max_length=256)]


class Session(Resource):
    """A signed-in session: send ``token`` as ``Authorization: Bearer <token>``."""

    token: str
    user: User
    expires_at: float | None


class BrowserSession(Resource):
    """A browser's signed-in session. Its token is not here: it is in the ``assay_session``
    cookie (HttpOnly, SameSite=Strict, path ``/api/``), which no script of a page can read and
    which the browser sends with its requests to the API."""

    user: User
    expires_at: float | None


class UserCreate(Request):
    username: Username
    password: NewPassword
    admin: bool = False


class UserChange(Request):
    """Set exactly the fields to change. Only an admin changes ``admin`` or ``active``, or
    another user's password."""

    password: NewPassword | None = None
    admin: bool | None = None
    active: bool | None = None


class TokenCreate(Request):
    description: Description = ""
    lifespan_days: Annotated[int, Field(ge=1, le=MAX_TOKEN_DAYS)] | None = Field(
        default=None, description="Days until it expires; none: until revoked."
    )


class AccessToken(Resource):
    id: int
    username: str
    kind: str = Field(description="`access` (made for scripts) or `session` (from signing in).")
    description: str
    created_at: float
    expires_at: float | None
    revoked_at: float | None


class AccessTokenList(Resource):
    tokens: list[AccessToken]


class NewAccessToken(Resource):
    """A token just made: ``token`` is shown this once and never again."""

    token: str
    info: AccessToken


class OneTimeToken(Resource):
    """A one-time sign-in token of the signed-in user, for a browser: shown this once, good for
    one exchange (``POST /api/v1/auth/one-time``) until ``expires_at``."""

    token: str
    expires_at: float


class OneTimeSignIn(Request):
    """Exchange a one-time sign-in token for a session (the token is spent either way once it
    is accepted)."""

    token: Annotated[str, Field(min_length=1, max_length=256)]
