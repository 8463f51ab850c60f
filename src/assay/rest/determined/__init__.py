"""Determined's REST shapes, as its own clients (``det``, ``determined.experimental.client``
of determined 0.38.1) send and read them, for the surface a master serves under ``/det``.

Each is defined once, from Determined's generated client (``determined/common/api/bindings.py``)
and its protobuf definitions: camelCase on the wire as grpc-gateway writes protobuf's JSON
(snake_case in Python), except ``GET /info``, which Determined's master writes in snake_case.
Errors are :class:`DetError`, the body Determined's master answers every error with. Nothing
here reads a database or knows the master: it is only the wire.
"""

from __future__ import annotations

from assay.rest.determined._common import (
    DETERMINED_VERSION,
    GRPC_CODE_OF_STATUS,
    PASSWORD_SALT,
    DetError,
    DetErrorBody,
    DetRequest,
    DetResource,
    GrpcCode,
    Pagination,
    client_hash,
    det_error,
    paginate,
)
from assay.rest.determined._master import (
    GetMasterResponse,
    MasterInfo,
    Product,
    SsoProvider,
    SsoProviderInfo,
    Telemetry,
)
from assay.rest.determined._users import (
    AgentUserGroup,
    Login,
    LoginResponse,
    LogoutResponse,
    User,
    UserList,
    UserResponse,
)

__all__ = [
    "DETERMINED_VERSION",
    "GRPC_CODE_OF_STATUS",
    "PASSWORD_SALT",
    "AgentUserGroup",
    "DetError",
    "DetErrorBody",
    "DetRequest",
    "DetResource",
    "GetMasterResponse",
    "GrpcCode",
    "Login",
    "LoginResponse",
    "LogoutResponse",
    "MasterInfo",
    "Pagination",
    "Product",
    "SsoProvider",
    "SsoProviderInfo",
    "Telemetry",
    "User",
    "UserList",
    "UserResponse",
    "client_hash",
    "det_error",
    "paginate",
]
