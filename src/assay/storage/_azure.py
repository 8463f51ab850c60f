"""Checkpoints in Azure Blob Storage, through azure-storage-blob (the ``azure`` extra).

The container is reached by ``connection_string``, or by ``account_url`` with an optional
``credential`` (an account key or SAS token), as in Determined. The library retries requests
on transient errors and moves big blobs in parallel blocks.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

from assay.errors import ErrorDetail, StorageError
from assay.storage._base import Progress
from assay.storage._object import ObjectStorage, write_replacing
from assay.storage._reach import Endpoint, EndpointLimit, check_endpoint

_CONCURRENCY = 4


class AzureClient:
    """The :class:`~assay.storage.ObjectClient` of one Azure Blob Storage container."""

    def __init__(
        self,
        container: str,
        *,
        connection_string: str | None = None,
        account_url: str | None = None,
        credential: str | None = None,
        timeout: float | None = None,
        limit: EndpointLimit | None = None,
    ) -> None:
        self.container_name = container
        self._settings = (connection_string, account_url, credential)
        self._timeout = timeout
        self.limit = limit
        """The endpoints it may contact (a master's); None: whatever the config names."""
        self.quiet = timeout is not None or limit is not None
        """Its errors never quote the server's answer (a probe's, or anything the master's)."""
        self._container: Any = None

    def _service(self) -> Any:
        """The library's client of the account: made without contacting it."""
        from azure.storage.blob import BlobServiceClient

        connection_string, account_url, credential = self._settings
        quick: dict[str, Any] = {}
        if self._timeout is not None:
            quick = {
                "connection_timeout": self._timeout,
                "read_timeout": self._timeout,
                "retry_total": 0,
            }
        with self._errors("connect"):
            if connection_string is not None:
                return BlobServiceClient.from_connection_string(connection_string, **quick)
            return BlobServiceClient(account_url or "", credential=credential, **quick)

    @property
    def container(self) -> Any:
        if self._container is None:
            service = self._service()
            # The endpoint as the library will use it (a connection string is read by the
            # library itself, so no reading of ours can differ from the server it contacts).
            check_endpoint(self.limit, self._endpoint_of(service), self.describe())
            self._container = service.get_container_client(self.container_name)
        return self._container

    def describe(self) -> str:
        _, account_url, _ = self._settings
        where = f" at {account_url}" if account_url else ""
        return f"azure container {self.container_name!r}{where}"

    def endpoint(self) -> Endpoint | None:
        return self._endpoint_of(self._service())

    def _endpoint_of(self, service: Any) -> Endpoint:
        _, account_url, _ = self._settings
        return Endpoint(str(service.url), "account_url" if account_url else "connection_string")

    def quick(self, timeout: float) -> AzureClient:
        connection_string, account_url, credential = self._settings
        return AzureClient(
            self.container_name,
            connection_string=connection_string,
            account_url=account_url,
            credential=credential,
            timeout=timeout,
            limit=self.limit,
        )

    def upload_file(self, path: Path, key: str, progress: Progress | None) -> None:
        with self._errors(f"upload {key}"), path.open("rb") as data:
            self.container.upload_blob(
                key,
                data,
                overwrite=True,
                max_concurrency=_CONCURRENCY,
                progress_hook=_increments(progress),
            )

    def download_file(self, key: str, path: Path, size: int, progress: Progress | None) -> None:
        with self._errors(f"download {key}"):
            # Counted as the chunks land: the library's progress hook is not called for a
            # blob that comes in one request.
            stream = self.container.download_blob(key, max_concurrency=_CONCURRENCY)
            write_replacing(path, stream.chunks(), progress)

    def put_bytes(self, key: str, data: bytes, *, only_if_absent: bool) -> bool:
        from azure.core.exceptions import ResourceExistsError

        with self._errors(f"write {key}"):
            try:
                self.container.upload_blob(key, data, overwrite=not only_if_absent)
            except ResourceExistsError:
                return False
        return True

    def get_bytes(self, key: str) -> bytes | None:
        from azure.core.exceptions import ResourceNotFoundError

        with self._errors(f"read {key}"):
            try:
                data: bytes = self.container.download_blob(key).readall()
            except ResourceNotFoundError as exc:
                if getattr(exc, "error_code", None) == "ContainerNotFound":
                    raise
                return None
        return data

    def exists(self, key: str) -> bool:
        with self._errors(f"look up {key}"):
            return bool(self.container.get_blob_client(key).exists())

    def list_sizes(self, prefix: str) -> dict[str, int]:
        with self._errors(f"list {prefix}"):
            return {b.name: int(b.size) for b in self.container.list_blobs(name_starts_with=prefix)}

    def delete_keys(self, keys: Sequence[str]) -> None:
        from azure.core.exceptions import ResourceNotFoundError

        for key in keys:
            with self._errors(f"delete {key}"):
                try:
                    self.container.delete_blob(key)
                except ResourceNotFoundError as exc:
                    if getattr(exc, "error_code", None) == "ContainerNotFound":
                        raise

    @contextmanager
    def _errors(self, what: str) -> Iterator[None]:
        from azure.core.exceptions import (
            AzureError,
            ClientAuthenticationError,
            HttpResponseError,
            ResourceNotFoundError,
            ServiceRequestError,
        )

        where = self.describe()
        # The server's words are not passed on where they would reach a user through the
        # master (a probe's, or any in the master's process): only the HTTP status.
        quiet = self.quiet

        def said(exc: HttpResponseError) -> str:
            return f"HTTP {exc.status_code}" if quiet else _one_line(exc)

        try:
            yield
        except StorageError:
            raise
        except ResourceNotFoundError as exc:
            message = f"{where} does not exist ({said(exc)})"
            raise StorageError(message, [ErrorDetail("container", message)]) from exc
        except (ClientAuthenticationError, HttpResponseError) as exc:
            # The service answers a wrong key or SAS token with 403 (AuthorizationFailure),
            # which the library raises as a plain HttpResponseError.
            if not isinstance(exc, ClientAuthenticationError) and exc.status_code not in (
                401,
                403,
            ):
                raise StorageError(f"{where}: could not {what}: {said(exc)}") from exc
            message = f"{where} refused the credentials or access: {said(exc)}"
            raise StorageError(message, [ErrorDetail("credential", message)]) from exc
        except ServiceRequestError as exc:
            message = f"{where} is not reachable: {_one_line(exc)}"
            raise StorageError(message, [ErrorDetail("account_url", message)]) from exc
        except (AzureError, ValueError, OSError) as exc:
            message = f"{where}: could not {what}: {_one_line(exc)}"
            raise StorageError(message) from exc


def _one_line(exc: Exception) -> str:
    """The service's message without the request id, time and XML body it appends on
    later lines."""
    text = str(getattr(exc, "message", None) or exc)
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    code = getattr(exc, "error_code", None)
    code = getattr(code, "value", code)  # the library's StorageErrorCode enum
    return f"{first} ({code})" if code and str(code) not in first else first


def _increments(progress: Progress | None) -> Any:
    """Azure's progress hook (bytes so far, total) as :data:`Progress` (bytes just moved)."""
    if progress is None:
        return None
    seen = 0

    def hook(current: int, total: int | None) -> None:
        nonlocal seen
        if current > seen:
            progress(current - seen)
            seen = current

    return hook


class AzureStorage(ObjectStorage):
    """Checkpoint storage in an Azure Blob Storage container, laid out as
    :class:`~assay.storage.ObjectStorage` describes (Determined's azure storage has no prefix:
    checkpoints are at the container's top level)."""

    kind: ClassVar[str] = "azure"

    def __init__(
        self,
        container: str,
        *,
        connection_string: str | None = None,
        account_url: str | None = None,
        credential: str | None = None,
        limit: EndpointLimit | None = None,
    ) -> None:
        client = AzureClient(
            container,
            connection_string=connection_string,
            account_url=account_url,
            credential=credential,
            limit=limit,
        )
        super().__init__(client)
