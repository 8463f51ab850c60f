"""What every Determined shape shares: the model bases (camelCase on the wire, snake_case in
Python), the error body its master answers with, and the password hash its clients send."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from enum import IntEnum

from pydantic import ConfigDict, Field
from pydantic.alias_generators import to_camel

from assay.errors import InvalidRequest
from assay.rest._common import Request, Resource

DETERMINED_VERSION = "0.38.1"
"""The Determined release whose clients this surface speaks to: its master answers with this
version, so a ``det`` of that release prints no warning that the two differ."""

PASSWORD_SALT = "GubPEmmotfiK9TMD6Zdw"
"""The fixed salt Determined's clients put before a password they hash (its
``determined.common.api.authentication``)."""


def client_hash(password: str) -> str:
    """What a Determined client sends for ``password`` with ``isHashed: true``: the hex SHA-512
    of :data:`PASSWORD_SALT` and the password; an empty password is sent empty."""
    if not password:
        return ""
    return hashlib.sha512((PASSWORD_SALT + password).encode()).hexdigest()


def timestamp(seconds: float) -> str:
    """A time as Determined's wire writes one (protobuf's Timestamp in JSON: RFC 3339, UTC)."""
    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")


class DetResource(Resource):
    """A Determined answer: camelCase on the wire (as grpc-gateway writes protobuf's JSON),
    snake_case in Python, either accepted."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
    )


class DetRequest(Request):
    """A Determined request body, camelCase on the wire, checked as every request body is
    (unknown fields and values of another JSON type are refused, as Determined's master
    refuses them)."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
    )


class GrpcCode(IntEnum):
    """The gRPC status codes Determined's errors carry (``code``), each with the name its
    master writes as ``reason``."""

    INVALID_ARGUMENT = 3
    NOT_FOUND = 5
    ALREADY_EXISTS = 6
    PERMISSION_DENIED = 7
    RESOURCE_EXHAUSTED = 8
    FAILED_PRECONDITION = 9
    ABORTED = 10
    UNIMPLEMENTED = 12
    INTERNAL = 13
    UNAVAILABLE = 14
    UNAUTHENTICATED = 16

    @property
    def reason(self) -> str:
        """The code's name as Go's ``codes.Code.String()`` spells it (``NotFound``)."""
        return "".join(word.capitalize() for word in self.name.split("_"))


GRPC_CODE_OF_STATUS: dict[int, GrpcCode] = {
    400: GrpcCode.INVALID_ARGUMENT,
    401: GrpcCode.UNAUTHENTICATED,
    403: GrpcCode.PERMISSION_DENIED,
    404: GrpcCode.NOT_FOUND,
    405: GrpcCode.UNIMPLEMENTED,
    409: GrpcCode.ABORTED,
    413: GrpcCode.RESOURCE_EXHAUSTED,
    429: GrpcCode.RESOURCE_EXHAUSTED,
    502: GrpcCode.UNAVAILABLE,
}
"""The code an answer of each HTTP status carries: the one grpc-gateway answers that status for
(413 has none there; it is the nearest)."""


class DetErrorBody(Resource):
    """What Determined's master writes under ``error`` (its ``grpcutil.errorHandler``)."""

    code: int = Field(description="The gRPC status code.")
    reason: str = Field(description="The code's name, e.g. NotFound, Unauthenticated.")
    error: str = Field(description="What went wrong, in words: Determined's clients print it.")


class DetError(Resource):
    """Every 4xx and 5xx answer under ``/det``. Determined's clients read ``error.error``
    (``APIException``) or, first, ``message`` (404 and 403); both say the same."""

    error: DetErrorBody
    code: int = Field(description="The gRPC status code, as grpc-gateway's own errors give it.")
    message: str


def det_error(status: int, message: str) -> DetError:
    """The answer for an error of HTTP ``status`` saying ``message``."""
    code = GRPC_CODE_OF_STATUS.get(status, GrpcCode.INTERNAL)
    body = DetErrorBody(code=code.value, reason=code.reason, error=message)
    return DetError(error=body, code=code.value, message=message)


class Pagination(DetResource):
    """Which part of a list an answer holds (``v1Pagination``): items ``startIndex`` up to
    ``endIndex`` (exclusive) of ``total``; a client asks for the next page from ``endIndex``
    until it reaches ``total``."""

    offset: int
    limit: int
    start_index: int
    end_index: int
    total: int


def paginate(total: int, offset: int, limit: int) -> Pagination:
    """The page from ``offset`` (negative: that many from the end) of ``limit`` items (0: all
    the rest) of a list of ``total``, as Determined's master pages every list; an offset
    outside the list is :class:`~assay.errors.InvalidRequest`."""
    start = total + offset if offset < 0 else offset
    if not 0 <= start <= total:
        raise InvalidRequest(
            f"offset {offset} is outside the list of {total}: give one from {-total} to {total}"
        )
    end = total if limit == 0 else min(start + limit, total)
    return Pagination(offset=offset, limit=limit, start_index=start, end_index=end, total=total)
