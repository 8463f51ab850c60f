"""Talking to the master over HTTP. Never imports server code.

:class:`Client` answers with ``assay.rest`` resources (pydantic models); it is loaded on first
use, so trial processes, which need only :class:`HttpSession`, never import pydantic; the
checkpoint download (tarfile and friends) is loaded on first use too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from assay.client._auth import USER_TOKEN_ENV, StoredLogin, TokenStore, config_dir, token_for
from assay.client._http import DEFAULT_MASTER, HttpSession, master_url

if TYPE_CHECKING:
    from assay.client._client import Client
    from assay.client._download import download_checkpoint, extract_tar
    from assay.client._tunnel import relay

__all__ = [
    "DEFAULT_MASTER",
    "USER_TOKEN_ENV",
    "Client",
    "HttpSession",
    "StoredLogin",
    "TokenStore",
    "config_dir",
    "download_checkpoint",
    "extract_tar",
    "master_url",
    "relay",
    "token_for",
]


def __getattr__(name: str) -> Any:
    # Loaded on first use: a trial process starts without pydantic, tarfile and tempfile.
    if name == "Client":
        from assay.client import _client

        return _client.Client
    if name in ("download_checkpoint", "extract_tar"):
        from assay.client import _download

        return getattr(_download, name)
    if name == "relay":
        from assay.client import _tunnel

        return _tunnel.relay
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
