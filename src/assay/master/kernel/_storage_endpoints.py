"""The object-store endpoints the master itself contacts for experiments' checkpoint storage.

An experiment's ``checkpoint_storage`` may name any server (an s3 ``endpoint_url``, an azure
``account_url`` or connection string). Were the master to contact it, anyone who may submit
could make the master send requests into its own network, signed with the cloud credentials
of the master's environment when the config has none, and read the answers back in the
refusal. So the master contacts only the endpoints its admin named: its own
``checkpoint_storage``'s and those in ``storage_endpoints`` of the master config (besides the
clouds' own services, see :mod:`assay.storage`). Any other storage is checked for its shape
at submission and used by the trials only; the master reads and deletes nothing there (a
download through the master, a checkpoint collection or deletion says so in one line).
"""

from __future__ import annotations

import contextlib

from assay.config import MasterConfig
from assay.errors import AssayError
from assay.storage import EndpointLimit, storage_endpoint, storage_from_config


def admin_endpoints(settings: MasterConfig) -> list[str]:
    """The endpoints the master may contact: ``storage_endpoints`` and its own storage's."""
    allowed = list(settings.storage_endpoints)
    own = settings.checkpoint_storage
    if own is not None:
        # The master's own storage is the admin's config; one that cannot be built adds no
        # endpoint (its use fails on its own terms).
        with contextlib.suppress(AssayError):
            endpoint = storage_endpoint(storage_from_config(own.to_json()))
            if endpoint is not None:
                allowed.append(endpoint.url)
    return allowed


def endpoint_limit(settings: MasterConfig) -> EndpointLimit:
    """:func:`admin_endpoints` as the limit a storage is checked against."""
    return EndpointLimit(admin_endpoints(settings))
