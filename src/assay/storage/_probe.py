"""Checking a storage config when it is submitted, so a bad one fails at once with its reason
rather than at a trial's first checkpoint."""

from __future__ import annotations

from assay.errors import ErrorDetail, InvalidConfig, StorageError
from assay.storage._base import StorageManager

PROBE_TIMEOUT = 1.5
"""Seconds each request of a probe may take: a refusal must come within about a second."""


def probe(manager: StorageManager, *, timeout: float = PROBE_TIMEOUT) -> None:
    """Write and delete a probe object in ``manager``'s storage (object stores only: a file
    system storage is mounted where the trials run, not necessarily here). Raises
    :class:`~assay.errors.StorageError` naming what is wrong: no credentials, refused
    credentials, a missing bucket, an endpoint that does not answer."""
    check = getattr(manager, "probe", None)
    if check is not None:
        check(timeout)


def probe_config_storage(manager: StorageManager, *, where: str = "checkpoint_storage") -> None:
    """:func:`probe`, its failure reported as an :class:`~assay.errors.InvalidConfig` with one
    detail at ``where.<the key at fault>``."""
    try:
        probe(manager)
    except StorageError as exc:
        field = exc.details[0].path if exc.details else ""
        path = f"{where}.{field}" if field else where
        raise InvalidConfig(
            f"invalid {where}: the storage could not be used",
            [ErrorDetail(path, exc.message)],
        ) from None
