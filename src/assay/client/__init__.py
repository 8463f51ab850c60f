"""Talking to the master over HTTP. Never imports server code.

:class:`Client` answers with ``assay.rest`` resources (pydantic models); it is loaded on first
use, so trial processes, which need only :class:`HttpSession`, never import pydantic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from assay.client._auth import USER_TOKEN_ENV, StoredLogin, TokenStore, token_for
from assay.client._http import DEFAULT_MASTER, HttpSession, master_url

if TYPE_CHECKING:
    from assay.client._client import Client

__all__ = [
    "DEFAULT_MASTER",
    "USER_TOKEN_ENV",
    "Client",
    "HttpSession",
    "StoredLogin",
    "TokenStore",
    "master_url",
    "token_for",
]


def __getattr__(name: str) -> Any:
    if name == "Client":
        from assay.client import _client

        return _client.Client
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
