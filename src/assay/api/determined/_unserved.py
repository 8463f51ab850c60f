"""What a request for a part of Determined's API that assay does not serve yet is told: 404 in
Determined's shape naming the endpoint, with assay's own command for the same where there is an
obvious one, so the real ``det`` prints one line that says what to do instead."""

from __future__ import annotations

import re
from dataclasses import dataclass

_ID = r"[^/]+"


@dataclass(frozen=True)
class Equivalent:
    """assay's command for the requests of ``method`` (any when None) whose path (under
    ``/det``) matches ``path``."""

    method: str | None
    path: re.Pattern[str]
    command: str


def _eq(method: str | None, path: str, command: str) -> Equivalent:
    return Equivalent(method, re.compile(path.replace("{id}", _ID)), command)


EQUIVALENTS: tuple[Equivalent, ...] = (
    _eq(None, r"/api/v1/checkpoints(/rm|/{id})?", "assay checkpoint delete UUID"),
    _eq(None, r"/api/v1/models(/.*)?", "assay model"),
    _eq("GET", r"/api/v1/master/config", "assay master config"),
    _eq("GET", r"/api/v1/master/logs", "assay master logs"),
    _eq(None, r"/api/v1/commands(/.*)?", "assay cmd run"),
    _eq(None, r"/api/v1/tensorboards(/.*)?", "assay tensorboard"),
    _eq(None, r"/api/v1/notebooks(/.*)?", "assay notebook"),
    _eq(None, r"/api/v1/shells(/.*)?", "assay shell"),
    _eq("POST", r"/api/v1/users", "assay user create USERNAME"),
    _eq(None, r"/api/v1/users/{id}/password", "assay user change-password USERNAME"),
    _eq("PATCH", r"/api/v1/users/{id}", "assay user activate|deactivate USERNAME"),
    _eq(None, r"/api/v1/(tokens|users/{id}/token)(/.*)?", "assay token"),
)


def unserved(method: str, path: str) -> str:
    """What a ``method`` request for ``path`` (under ``/det``) that no route serves is told."""
    message = (
        f"{method} {path} is part of Determined's API that assay does not serve yet "
        "(served under /det: the master's info, signing in, users, experiments, trials, "
        "their logs and metrics, checkpoints, models, the job queue, agents and slots)"
    )
    return message + equivalent(method, path)


def equivalent(method: str, path: str) -> str:
    """``; assay's own command for it: ...`` where assay has one for the request, else ``""``."""
    for eq in EQUIVALENTS:
        if eq.method in (None, method) and eq.path.fullmatch(path):
            return f"; assay's own command for it: `{eq.command}`"
    return ""
