"""Checkpoints in Amazon S3 or an S3-compatible store (MinIO, Ceph, ...), through boto3.

Credentials are the config's ``access_key`` and ``secret_key`` when given, else boto3's own
chain (``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``, ``~/.aws``, an instance role), as in
Determined. In the master's process a client contacts only the servers its admin named (see
:mod:`assay.storage._reach`), so its own credentials never go to one a config chose. Transfers
use boto3's managed transfer (multipart and parallel for big files); requests that fail for
transient reasons are retried by botocore.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from assay.errors import ErrorDetail, StorageError
from assay.storage._base import Progress
from assay.storage._object import ObjectStorage, write_replacing
from assay.storage._reach import Endpoint, EndpointLimit, check_endpoint

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client as _Boto3S3

_RETRIES = 8
"""Attempts per request (botocore's standard mode backs off between them)."""

_MANAGED_FROM = 8 * 1024 * 1024
"""Files this big or bigger go through boto3's managed transfer (multipart, in parallel)."""

_CHUNK = 1024 * 1024

_DELETE_BATCH = 1000
"""The most keys one DeleteObjects request takes."""

_CREDENTIAL_ERRORS = frozenset(
    {
        "InvalidAccessKeyId",
        "SignatureDoesNotMatch",
        "AccessDenied",
        "InvalidToken",
        "ExpiredToken",
        "TokenRefreshRequired",
        "AllAccessDisabled",
        "403",
    }
)


_sessions: dict[float | None, Any] = {}
_sessions_lock = threading.Lock()


def _session(timeout: float | None) -> Any:
    """botocore's session, one per process (and one for probes): it caches the service
    descriptions that take most of the time of making a client."""
    import boto3
    import botocore.session

    with _sessions_lock:
        session = _sessions.get(timeout)
        if session is None:
            core = botocore.session.get_session()
            if timeout is not None:
                # A probe must answer quickly even where no credentials are configured and
                # boto3 would ask an instance-metadata service that is not there. botocore
                # reads this setting as whole seconds, and 0 would make every request fail.
                core.set_config_variable("metadata_service_timeout", metadata_timeout(timeout))
                core.set_config_variable("metadata_service_num_attempts", 1)
            # boto3's session adds the managed transfers (upload_file...) to its clients.
            session = _sessions[timeout] = boto3.session.Session(botocore_session=core)
        return session


def metadata_timeout(timeout: float) -> int:
    """The instance-metadata service's timeout for a probe of ``timeout`` seconds: about half
    of it, in the whole seconds botocore takes, and never 0."""
    return max(1, math.floor(timeout / 2))


_clients: dict[tuple[Any, ...], Any] = {}


def _make_client(
    keys: tuple[str | None, str | None], endpoint_url: str | None, timeout: float | None
) -> _Boto3S3:
    """A client for these settings; shared, as boto3's clients are thread-safe and making
    one takes a while."""
    import botocore.config

    cache_key = (*keys, endpoint_url, timeout)
    with _sessions_lock:
        cached: _Boto3S3 | None = _clients.get(cache_key)
    if cached is not None:
        return cached

    quick = timeout is not None
    config = botocore.config.Config(
        retries={"max_attempts": 1 if quick else _RETRIES, "mode": "standard"},
        connect_timeout=timeout if quick else 10,
        read_timeout=timeout if quick else 60,
        max_pool_connections=32,
    )
    session = _session(timeout)
    with _sessions_lock:  # making clients from one session is not thread-safe
        client: _Boto3S3 = session.client(
            "s3",
            endpoint_url=endpoint_url,
            aws_access_key_id=keys[0],
            aws_secret_access_key=keys[1],
            config=config,
        )
        _clients[cache_key] = client
    return client


class S3Client:
    """The :class:`~assay.storage.ObjectClient` of one S3 bucket."""

    def __init__(
        self,
        bucket: str,
        *,
        access_key: str | None = None,
        secret_key: str | None = None,
        endpoint_url: str | None = None,
        timeout: float | None = None,
        limit: EndpointLimit | None = None,
    ) -> None:
        from boto3.s3.transfer import TransferConfig

        self.bucket = bucket
        self.endpoint_url = endpoint_url
        self._keys = (access_key, secret_key)
        self._timeout = timeout
        self.limit = limit
        """The endpoints it may contact (a master's); None: whatever the config names."""
        self.quiet = timeout is not None or limit is not None
        """Its errors never quote the server's answer (a probe's, or anything the master's)."""
        self._client: _Boto3S3 | None = None
        self._lock = threading.Lock()
        self._transfer = TransferConfig(use_threads=True, max_concurrency=4)

    @property
    def _s3(self) -> _Boto3S3:
        # Made on first use: building the storage (to check a config, to read a path) must
        # stay cheap.
        with self._lock:
            if self._client is None:
                # Before boto3 is given the endpoint: a refused one is never contacted, and
                # never sent the credentials of this process's environment.
                check_endpoint(self.limit, self.endpoint(), self.describe())
                self._client = _make_client(self._keys, self.endpoint_url, self._timeout)
            return self._client

    def describe(self) -> str:
        where = self.endpoint_url or "AWS S3"
        return f"s3 bucket {self.bucket!r} at {where}"

    def endpoint(self) -> Endpoint | None:
        return Endpoint(self.endpoint_url, "endpoint_url") if self.endpoint_url else None

    def quick(self, timeout: float) -> S3Client:
        access, secret = self._keys
        return S3Client(
            self.bucket,
            access_key=access,
            secret_key=secret,
            endpoint_url=self.endpoint_url,
            timeout=timeout,
            limit=self.limit,
        )

    def upload_file(self, path: Path, key: str, progress: Progress | None) -> None:
        with self._errors(f"upload {key}"):
            size = path.stat().st_size
            if size >= _MANAGED_FROM:
                self._s3.upload_file(
                    str(path), self.bucket, key, Callback=progress, Config=self._transfer
                )
                return
            # One request for a small file: the managed transfer's threads cost more than it.
            with path.open("rb") as body:
                self._s3.put_object(Bucket=self.bucket, Key=key, Body=body)
            if progress is not None:
                progress(size)

    def download_file(self, key: str, path: Path, size: int, progress: Progress | None) -> None:
        with self._errors(f"download {key}"):
            if size >= _MANAGED_FROM:
                self._s3.download_file(
                    self.bucket, key, str(path), Callback=progress, Config=self._transfer
                )
                return
            answer = self._s3.get_object(Bucket=self.bucket, Key=key)
            write_replacing(path, answer["Body"].iter_chunks(_CHUNK), progress)

    def put_bytes(self, key: str, data: bytes, *, only_if_absent: bool) -> bool:
        from botocore.exceptions import ClientError

        with self._errors(f"write {key}"):
            if not only_if_absent:
                self._s3.put_object(Bucket=self.bucket, Key=key, Body=data)
                return True
            try:
                self._s3.put_object(Bucket=self.bucket, Key=key, Body=data, IfNoneMatch="*")
            except ClientError as exc:
                code = _code(exc)
                if code in ("PreconditionFailed", "ConditionalRequestConflict"):
                    return False
                if code != "NotImplemented":
                    raise
                # A store without conditional writes: the caller checked for the key just
                # before, which only a writer racing on the same fresh key can get past.
                self._s3.put_object(Bucket=self.bucket, Key=key, Body=data)
        return True

    def get_bytes(self, key: str) -> bytes | None:
        from botocore.exceptions import ClientError

        with self._errors(f"read {key}"):
            try:
                answer = self._s3.get_object(Bucket=self.bucket, Key=key)
            except ClientError as exc:
                if _code(exc) in ("NoSuchKey", "404"):
                    return None
                raise
            return answer["Body"].read()

    def exists(self, key: str) -> bool:
        from botocore.exceptions import ClientError

        with self._errors(f"look up {key}"):
            try:
                self._s3.head_object(Bucket=self.bucket, Key=key)
            except ClientError as exc:
                if _code(exc) in ("404", "NoSuchKey", "NotFound"):
                    return False
                raise
        return True

    def list_sizes(self, prefix: str) -> dict[str, int]:
        from botocore.exceptions import ClientError

        sizes: dict[str, int] = {}
        with self._errors(f"list {prefix}"):
            pages = self._s3.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=prefix
            )
            try:
                for page in pages:
                    for item in page.get("Contents", []):
                        sizes[item["Key"]] = item["Size"]
            except ClientError as exc:
                # A bucket that is gone holds nothing, as exists() answers for one key:
                # deleting what was in it must not fail for want of it.
                if _code(exc) != "NoSuchBucket":
                    raise
        return sizes

    def delete_keys(self, keys: Sequence[str]) -> None:
        for start in range(0, len(keys), _DELETE_BATCH):
            batch = keys[start : start + _DELETE_BATCH]
            with self._errors(f"delete {len(batch)} objects"):
                answer = self._s3.delete_objects(
                    Bucket=self.bucket,
                    Delete={"Objects": [{"Key": k} for k in batch], "Quiet": True},
                )
            failed = answer.get("Errors") or []
            if failed:
                first = failed[0]
                said = "" if self._quiet() else f": {first.get('Code')}: {first.get('Message')}"
                raise StorageError(
                    f"{self.describe()}: could not delete {len(failed)} objects, e.g. "
                    f"{first.get('Key')}{said}"
                )

    def _quiet(self) -> bool:
        return self.quiet

    # -- errors -----------------------------------------------------------------------------

    def _errors(self, what: str) -> _Translate:
        return _Translate(self, what)


class _Translate:
    """Turns botocore's exceptions into one-line :class:`StorageError`s naming the key of the
    config that is likely at fault."""

    def __init__(self, client: S3Client, what: str) -> None:
        self.client = client
        self.what = what

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> None:
        from boto3.exceptions import Boto3Error, S3UploadFailedError
        from botocore.exceptions import (
            BotoCoreError,
            ClientError,
            ConnectionError,
            NoCredentialsError,
            PartialCredentialsError,
        )
        from s3transfer.exceptions import (
            RetriesExceededError,
            S3DownloadFailedError,
        )

        if exc is None or isinstance(exc, StorageError):
            return
        original = exc
        if isinstance(exc, S3UploadFailedError) and isinstance(exc.__context__, ClientError):
            exc = exc.__context__  # boto3 wraps the service's answer
        where = self.client.describe()
        field, message = "", ""
        if isinstance(exc, NoCredentialsError | PartialCredentialsError):
            field = "access_key"
            message = (
                f"no credentials for {where}: set checkpoint_storage.access_key and secret_key, "
                "or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY where the master and trials run"
            )
        elif isinstance(exc, ConnectionError):
            field = "endpoint_url"
            message = f"{where} is not reachable: {exc}"
        elif isinstance(exc, ClientError):
            code = _code(exc)
            reason = exc.response.get("Error", {}).get("Message") or code
            if self.client._quiet():
                # The server's words are not passed on: where a user chose the server, it
                # would answer them through the master. Only the status, and a code assay
                # knows, which are its own words.
                status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
                reason = f"HTTP {status}" if isinstance(status, int) else "an error"
                if code in _CREDENTIAL_ERRORS and not code.isdigit():
                    reason = f"{code}, {reason}"
            if code == "NoSuchBucket":
                field, message = "bucket", f"{where} does not exist"
            elif code in _CREDENTIAL_ERRORS:
                field = "access_key"
                shown = reason if self.client._quiet() else f"{code}: {reason}"
                message = f"{where} refused the credentials or access ({shown})"
            elif self.client._quiet():
                message = f"{where}: could not {self.what}: the server answered {reason}"
            else:
                message = f"{where}: could not {self.what}: {code}: {reason}"
        elif isinstance(
            exc, BotoCoreError | Boto3Error | S3DownloadFailedError | RetriesExceededError
        ):
            # A failed transfer's text can carry the server's answer (boto3 words it in).
            said = type(exc).__name__ if self.client._quiet() else exc
            message = f"{where}: could not {self.what}: {said}"
        else:
            return
        details = [ErrorDetail(field, message)] if field else []
        raise StorageError(message, details) from original


def _code(exc: Any) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


class S3Storage(ObjectStorage):
    """Checkpoint storage in an S3 bucket: checkpoint ``uuid`` is the objects under
    ``<prefix>/<uuid>/`` (see :class:`~assay.storage.ObjectStorage` for the rest)."""

    kind: ClassVar[str] = "s3"

    def __init__(
        self,
        bucket: str,
        *,
        prefix: str | None = None,
        access_key: str | None = None,
        secret_key: str | None = None,
        endpoint_url: str | None = None,
        limit: EndpointLimit | None = None,
    ) -> None:
        client = S3Client(
            bucket,
            access_key=access_key,
            secret_key=secret_key,
            endpoint_url=endpoint_url,
            limit=limit,
        )
        super().__init__(client, prefix)
