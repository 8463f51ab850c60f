"""Checking a storage config when it is submitted, so a bad one fails at once with its reason
rather than at a trial's first checkpoint: only where the master may contact the storage's
server (see :mod:`assay.storage._reach`); the trials check the rest as they use it."""

from __future__ import annotations

from assay.errors import ErrorDetail, InvalidConfig, StorageError
from assay.storage._base import StorageManager
from assay.storage._reach import Endpoint, EndpointLimit

PROBE_TIMEOUT = 1.5
"""Seconds each request of a probe may take: a refusal must come within about a second."""


def storage_endpoint(manager: StorageManager) -> Endpoint | None:
    """The server ``manager``'s config chose, found without contacting it; None for a
    file-system storage or a cloud service's own endpoint. Raises
    :class:`~assay.errors.StorageError` when the config cannot say (a malformed azure
    connection string)."""
    endpoint = getattr(manager, "endpoint", None)
    return endpoint() if endpoint is not None else None


def probe(manager: StorageManager, *, timeout: float = PROBE_TIMEOUT) -> None:
    """Write and delete a probe object in ``manager``'s storage (object stores only: a file
    system storage is mounted where the trials run, not necessarily here). Raises
    :class:`~assay.errors.StorageError` naming what is wrong: no credentials, refused
    credentials, a missing bucket, an endpoint that does not answer. Its messages never quote
    the server's answer."""
    check = getattr(manager, "probe", None)
    if check is not None:
        check(timeout)


def probe_config_storage(
    manager: StorageManager,
    *,
    allowed: EndpointLimit | None = None,
    where: str = "checkpoint_storage",
) -> bool:
    """:func:`probe`, its failure reported as an :class:`~assay.errors.InvalidConfig` with one
    detail at ``where.<the key at fault>``. With ``allowed``, a storage whose server it does
    not allow is not contacted at all. Returns whether the storage was probed."""
    try:
        if allowed is not None and not allowed.allows(storage_endpoint(manager)):
            return False
        probe(manager)
    except StorageError as exc:
        field = exc.details[0].path if exc.details else ""
        path = f"{where}.{field}" if field else where
        raise InvalidConfig(
            f"invalid {where}: the storage could not be used",
            [ErrorDetail(path, exc.message)],
        ) from None
    return True
