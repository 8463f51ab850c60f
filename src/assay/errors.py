"""The exceptions assay raises.

Every error assay raises on purpose derives from :class:`AssayError`. Each subclass says when it
is raised and maps to one HTTP status, so the API, the client and the CLI agree on what went wrong.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

__all__ = [
    "AssayError",
    "Conflict",
    "ErrorDetail",
    "Fenced",
    "Forbidden",
    "InvalidConfig",
    "InvalidContext",
    "InvalidRequest",
    "InvalidTransition",
    "MasterUnreachable",
    "MethodNotAllowed",
    "NotFound",
    "ResourceManagerError",
    "StorageError",
    "TooLarge",
    "TooManyRequests",
    "Unauthorized",
    "Unavailable",
    "error_from_payload",
    "printable",
]


def printable(text: str) -> str:
    """``text`` as Unicode that can be encoded: a lone surrogate (what a YAML or JSON escape
    such as ``"\\ud800"`` gives, and an error may quote) is written as its escape, so no
    answer, log or terminal fails on the words of an error."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


@dataclass(frozen=True)
class ErrorDetail:
    """One problem inside a larger refusal: where it is (a dotted path) and what is wrong."""

    path: str
    message: str

    def __post_init__(self) -> None:
        # A path may name a key the user wrote, lone surrogates and all.
        object.__setattr__(self, "path", printable(self.path))
        object.__setattr__(self, "message", printable(self.message))

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message

    def to_json(self) -> dict[str, str]:
        return {"path": self.path, "message": self.message}


class AssayError(Exception):
    """Root of every error assay raises on purpose.

    ``type`` names the error on the wire; ``status`` is the HTTP status the API answers with.
    """

    type: ClassVar[str] = "AssayError"
    status: ClassVar[int] = 500

    def __init__(self, message: str, details: list[ErrorDetail] | None = None) -> None:
        super().__init__(message)
        self.message = printable(message)
        self.details: list[ErrorDetail] = list(details or [])

    def __str__(self) -> str:
        if not self.details:
            return self.message
        lines = [self.message, *(f"  - {d}" for d in self.details)]
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "error": {
                "type": self.type,
                "message": self.message,
                "details": [d.to_json() for d in self.details],
            }
        }


class InvalidRequest(AssayError):
    """Raised when a request is malformed or names values that cannot be accepted."""

    type = "InvalidRequest"
    status = 400


class InvalidConfig(InvalidRequest):
    """Raised when an experiment (or master/agent) config fails validation.

    ``details`` lists every problem found, each with the dotted path of the bad field.
    """

    type = "InvalidConfig"


class InvalidContext(InvalidRequest):
    """Raised when a context archive is unsafe or unreadable (absolute paths, ``..``, links
    escaping the root, device files)."""

    type = "InvalidContext"


class TooLarge(AssayError):
    """Raised when an upload (a context directory) is over its size limit."""

    type = "TooLarge"
    status = 413


class Unauthorized(AssayError):
    """Raised when a request carries no token, or one that does not grant what it asks."""

    type = "Unauthorized"
    status = 401


class Forbidden(AssayError):
    """Raised when a signed-in user asks for what only the object's owner or an admin may do,
    or when a request comes from a web page of another origin."""

    type = "Forbidden"
    status = 403


class TooManyRequests(AssayError):
    """Raised when a caller has tried too often (signing in with wrong passwords); the answer
    says when to try again."""

    type = "TooManyRequests"
    status = 429


class NotFound(AssayError):
    """Raised when an experiment, trial, checkpoint or other object does not exist."""

    type = "NotFound"
    status = 404


class MethodNotAllowed(AssayError):
    """Raised when a path exists but takes other methods (``PUT /api/v1/experiments``): the
    answer's ``Allow`` header lists the ones it takes."""

    type = "MethodNotAllowed"
    status = 405


class Conflict(AssayError):
    """Raised when a request clashes with the current state of an object."""

    type = "Conflict"
    status = 409


class Unavailable(AssayError):
    """Raised when what was asked for is there but not answering yet (a task's server still
    starting, a shell's sshd not listening): ask again shortly (the answer's ``Retry-After``)."""

    type = "Unavailable"
    status = 503


class Fenced(Conflict):
    """Raised when a trial process reports for an allocation the master has given up on (its
    agent was lost, so its trial may run elsewhere now): nothing it sends is taken, and the
    harness stops the process."""

    type = "Fenced"


class InvalidTransition(Conflict):
    """Raised when an object is asked to move to a state it cannot reach from where it is
    (archive an active experiment, activate a completed one)."""

    type = "InvalidTransition"


class StorageError(AssayError):
    """Raised when checkpoint storage fails to do what was asked (an object store that cannot
    be reached, refuses the credentials, or hands back a file of the wrong size)."""

    type = "StorageError"
    status = 502


def one_line(exc: BaseException) -> str:
    """The reason ``exc`` gives, on one line: an error's message without the details under it
    (a storage error's details repeat its message, under the config key at fault)."""
    text = exc.message if isinstance(exc, AssayError) else str(exc)
    return " ".join(text.split()) or type(exc).__name__


class PartlyDeleted(StorageError):
    """Raised by a storage's ``delete`` that failed after removing some of the checkpoint's
    files (or cannot tell whether it did): what is left is no longer the whole checkpoint."""

    type = "PartlyDeleted"


class ResourceManagerError(AssayError):
    """Raised when a pool's resource manager cannot do what was asked of its executor: a Slurm
    command that fails or is missing, a Kubernetes API that refuses or cannot be reached."""

    type = "ResourceManagerError"
    status = 502


class MasterUnreachable(AssayError):
    """Raised by the client when no master answers at the URL it was given."""

    type = "MasterUnreachable"
    status = 503


_BY_TYPE: dict[str, type[AssayError]] = {
    cls.type: cls
    for cls in (
        AssayError,
        InvalidRequest,
        InvalidConfig,
        InvalidContext,
        TooLarge,
        Unauthorized,
        Forbidden,
        TooManyRequests,
        NotFound,
        MethodNotAllowed,
        Conflict,
        Unavailable,
        Fenced,
        InvalidTransition,
        StorageError,
        PartlyDeleted,
        ResourceManagerError,
        MasterUnreachable,
    )
}
_BY_STATUS: dict[int, type[AssayError]] = {
    400: InvalidRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    405: MethodNotAllowed,
    409: Conflict,
    413: TooLarge,
    429: TooManyRequests,
}


def error_from_payload(status: int, payload: object) -> AssayError:
    """Rebuild the error a master answered with, so clients raise what the server raised."""
    if isinstance(payload, dict) and isinstance(payload.get("error"), dict):
        body = payload["error"]
        cls = _BY_TYPE.get(str(body.get("type")), _BY_STATUS.get(status, AssayError))
        details = [
            ErrorDetail(str(d.get("path", "")), str(d.get("message", "")))
            for d in body.get("details") or []
            if isinstance(d, dict)
        ]
        return cls(str(body.get("message", "")), details)
    cls = _BY_STATUS.get(status, AssayError)
    return cls(f"master answered HTTP {status}: {str(payload)[:500]}")
