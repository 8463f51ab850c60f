"""Where a signed-in user's tokens are kept between commands: one file in the user's config
directory (``$XDG_CONFIG_HOME/assay/auth.json``, else ``~/.config/assay/auth.json``), readable
by its owner only, with one token per master URL."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import NamedTuple

USER_TOKEN_ENV = "ASSAY_USER_TOKEN"
"""A token for scripts and CI; it takes precedence over a stored sign-in."""


def config_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or "~/.config"
    return Path(base).expanduser() / "assay"


class StoredLogin(NamedTuple):  # not a dataclass: one compiles its methods at every start
    username: str
    token: str


class TokenStore:
    """Sign-ins by master URL, in a private file (:func:`assay.files.write_private`)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or config_dir() / "auth.json"

    def _read(self) -> dict[str, dict[str, str]]:
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def get(self, url: str) -> StoredLogin | None:
        entry = self._read().get(url)
        if not isinstance(entry, dict):
            return None
        username, token = entry.get("username"), entry.get("token")
        if isinstance(username, str) and isinstance(token, str):
            return StoredLogin(username, token)
        return None

    def put(self, url: str, login: StoredLogin) -> None:
        data = self._read()
        data[url] = {"username": login.username, "token": login.token}
        self._write(data)

    def drop(self, url: str) -> None:
        data = self._read()
        if data.pop(url, None) is not None:
            self._write(data)

    def _write(self, data: dict[str, dict[str, str]]) -> None:
        from assay.files import write_private  # tempfile: only a sign-in writes

        write_private(self.path, json.dumps(data, indent=2))


def token_for(url: str) -> str | None:
    """The token to send to the master at ``url``: ``$ASSAY_USER_TOKEN``, else the stored
    sign-in."""
    env = os.environ.get(USER_TOKEN_ENV)
    if env:
        return env
    stored = TokenStore().get(url)
    return stored.token if stored is not None else None
