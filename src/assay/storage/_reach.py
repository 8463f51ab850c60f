"""Which object-store endpoints a process may contact for checkpoint storage.

A trial process uses the storage its experiment's config names, wherever that is: the config is
its owner's, and so is the process. The master is different: it acts on configs anyone may
submit, from inside the cluster's network and with its own cloud credentials in its
environment. So every storage the master builds is given an :class:`EndpointLimit` (through
``storage_from_config(..., limit=...)``): the endpoints its admin named (its own
``checkpoint_storage``'s and the master config's ``storage_endpoints``) besides the clouds' own
services (AWS S3 when a config names no ``endpoint_url``; Azure's
``https://*.blob.core.windows.net``). Such a storage's client refuses any other endpoint before
it connects, whichever part of the master asked (a probe, a download, a deletion), and its
errors never quote what a server answered.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterable
from dataclasses import dataclass

from assay.errors import ErrorDetail, StorageError

_DEFAULT_PORTS = {"http": 80, "https": 443}
_AZURE_CLOUD = ".blob.core.windows.net"

EndpointKey = tuple[str, str, int]
"""An endpoint as it is compared: scheme, host (lower case) and port (made explicit)."""


class EndpointNotAllowed(StorageError):
    """Raised in the master's process for a storage on a server its admin did not name: the
    master does not contact it (a refusal of this master's, not a failure of the storage)."""

    type = "EndpointNotAllowed"
    status = 409


@dataclass(frozen=True)
class Endpoint:
    """The server a storage config chose, and the config key that chose it."""

    url: str
    key: str


def endpoint_key(url: str) -> EndpointKey | None:
    """``url``'s scheme, host and port; None for anything but a plain ``http(s)://host[:port]``
    URL (a user part or a backslash is read differently by different parsers, so such a URL is
    never taken to name an allowed server)."""
    if "\\" in url or any(c.isspace() or ord(c) < 32 for c in url):
        return None
    try:
        parts = urllib.parse.urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname or parts.username is not None:
        return None
    return scheme, parts.hostname.lower(), port if port is not None else _DEFAULT_PORTS[scheme]


def is_cloud_service(url: str) -> bool:
    """Whether ``url`` is one of the clouds' own storage services, which are on no one's
    private network (Azure Blob Storage's public endpoints)."""
    key = endpoint_key(url)
    return key is not None and key[0] == "https" and key[1].endswith(_AZURE_CLOUD)


class EndpointLimit:
    """The endpoints a process may contact (see the module's docstring)."""

    def __init__(self, allowed: Iterable[str]) -> None:
        self.allowed = tuple(allowed)
        self._keys = {k for k in map(endpoint_key, self.allowed) if k is not None}

    def allows(self, endpoint: Endpoint | None) -> bool:
        """Whether ``endpoint`` (None: the cloud service's own) may be contacted."""
        if endpoint is None or is_cloud_service(endpoint.url):
            return True
        key = endpoint_key(endpoint.url)
        return key is not None and key in self._keys


def check_endpoint(limit: EndpointLimit | None, endpoint: Endpoint | None, where: str) -> None:
    """Raise :class:`EndpointNotAllowed` (one detail at ``endpoint.key``) when ``limit`` (a
    master's; None: a process of the config's owner, which contacts whatever it names) does
    not allow ``endpoint``; ``where`` describes the storage, for the message."""
    if limit is None or limit.allows(endpoint):
        return
    assert endpoint is not None
    message = refusal(endpoint, where)
    raise EndpointNotAllowed(message, [ErrorDetail(endpoint.key, message)])


def refusal(endpoint: Endpoint, where: str) -> str:
    """Why the master does not contact ``endpoint`` itself, and what to do instead."""
    return (
        f"the master does not contact {where}: its {endpoint.key} names a server that is "
        "neither the master's own checkpoint storage nor in storage_endpoints of the master "
        "config; trials use it directly, so read or delete its checkpoints where the storage "
        "is reachable, or ask the cluster's admin to add the endpoint to storage_endpoints"
    )
