"""Checkpoints in Google Cloud Storage, through google-cloud-storage (the ``gcs`` extra).

Credentials are Google's application default credentials (``GOOGLE_APPLICATION_CREDENTIALS``,
the metadata server of a Google Cloud machine), as in Determined. The library retries its
requests on transient errors; uploads are resumable for big files.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, ClassVar

from assay.errors import ErrorDetail, StorageError
from assay.storage._base import Progress
from assay.storage._object import ObjectStorage, write_replacing
from assay.storage._reach import Endpoint

_CHUNK = 1024 * 1024


class GCSClient:
    """The :class:`~assay.storage.ObjectClient` of one Google Cloud Storage bucket."""

    def __init__(self, bucket: str, *, timeout: float | None = None) -> None:
        self.bucket_name = bucket
        self._timeout = timeout
        self._bucket: Any = None

    @property
    def bucket(self) -> Any:
        if self._bucket is None:
            from google.cloud import storage

            with self._errors("connect"):
                self._bucket = storage.Client().bucket(self.bucket_name)
        return self._bucket

    def describe(self) -> str:
        return f"gcs bucket {self.bucket_name!r}"

    def quick(self, timeout: float) -> GCSClient:
        return GCSClient(self.bucket_name, timeout=timeout)

    def endpoint(self) -> Endpoint | None:
        return None  # Google's own service: a config cannot choose another

    def _options(self) -> dict[str, Any]:
        if self._timeout is None:
            return {}
        return {"timeout": self._timeout, "retry": None}

    def upload_file(self, path: Path, key: str, progress: Progress | None) -> None:
        with self._errors(f"upload {key}"):
            self.bucket.blob(key).upload_from_filename(str(path), **self._options())
        if progress is not None:
            progress(path.stat().st_size)

    def download_file(self, key: str, path: Path, size: int, progress: Progress | None) -> None:
        with self._errors(f"download {key}"), self.bucket.blob(key).open("rb") as src:
            write_replacing(path, iter(lambda: src.read(_CHUNK), b""), progress)

    def put_bytes(self, key: str, data: bytes, *, only_if_absent: bool) -> bool:
        from google.api_core.exceptions import PreconditionFailed

        condition = {"if_generation_match": 0} if only_if_absent else {}
        with self._errors(f"write {key}"):
            try:
                self.bucket.blob(key).upload_from_string(data, **condition, **self._options())
            except PreconditionFailed:
                return False
        return True

    def get_bytes(self, key: str) -> bytes | None:
        from google.api_core.exceptions import NotFound

        with self._errors(f"read {key}"):
            try:
                data: bytes = self.bucket.blob(key).download_as_bytes(**self._options())
            except NotFound:
                return None
        return data

    def exists(self, key: str) -> bool:
        with self._errors(f"look up {key}"):
            return bool(self.bucket.blob(key).exists(**self._options()))

    def list_sizes(self, prefix: str) -> dict[str, int]:
        with self._errors(f"list {prefix}"):
            return {b.name: int(b.size) for b in self.bucket.list_blobs(prefix=prefix)}

    def delete_keys(self, keys: Sequence[str]) -> None:
        from google.api_core.exceptions import NotFound

        for key in keys:
            with self._errors(f"delete {key}"), suppress(NotFound):
                self.bucket.delete_blob(key, **self._options())

    @contextmanager
    def _errors(self, what: str) -> Iterator[None]:
        from google.api_core import exceptions as api
        from google.auth.exceptions import DefaultCredentialsError, TransportError

        where = self.describe()
        field, message = "", ""
        try:
            yield
        except StorageError:
            raise
        except DefaultCredentialsError as exc:
            field = "type"
            message = (
                f"no credentials for {where}: set GOOGLE_APPLICATION_CREDENTIALS where the "
                f"master and trials run ({exc})"
            )
            raise StorageError(message, [ErrorDetail(field, message)]) from exc
        except (api.Unauthorized, api.Forbidden) as exc:
            message = f"{where} refused the credentials or access: {exc.message}"
            raise StorageError(message, [ErrorDetail("bucket", message)]) from exc
        except api.NotFound as exc:
            message = f"{where} does not exist ({exc.message})"
            raise StorageError(message, [ErrorDetail("bucket", message)]) from exc
        except (api.GoogleAPIError, TransportError, OSError) as exc:
            message = f"{where}: could not {what}: {exc}"
            raise StorageError(message) from exc


class GCSStorage(ObjectStorage):
    """Checkpoint storage in a Google Cloud Storage bucket, laid out as
    :class:`~assay.storage.ObjectStorage` describes."""

    kind: ClassVar[str] = "gcs"

    def __init__(self, bucket: str, *, prefix: str | None = None) -> None:
        super().__init__(GCSClient(bucket), prefix)
