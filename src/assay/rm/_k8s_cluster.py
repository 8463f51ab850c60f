"""What the Kubernetes manager needs of the cluster beside its pods: the client
(:func:`load_api`), its nodes as slots, its errors in one line, the kubelet's log timestamps,
and the headless Services of gangs (:class:`GangServices`).

A gang's pods find rank 0 by its DNS name (``r0.<service>.<namespace>.svc``,
:func:`assay.rm._pods.rank_address`), which exists only under a headless Service that the
pods name as their ``subdomain``. The manager makes the Service before a member's pod (a
second member finds it there) and deletes it with the last member's acknowledgement; one left
behind by a master stopped in between is deleted by the next :meth:`GangServices.prune` that
finds none of its pods.

Every client call blocks, so each runs in a thread (:func:`asyncio.to_thread`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
from collections.abc import Collection
from datetime import UTC, datetime
from typing import Any

from assay.config import KubernetesPoolConfig
from assay.errors import ResourceManagerError
from assay.rm._pods import (
    ALLOCATION_LABEL,
    POOL_LABEL,
    as_model,
    label_value,
    service_manifest,
    service_name,
)

log = logging.getLogger(__name__)


def load_api(config: KubernetesPoolConfig) -> Any:
    """A ``CoreV1Api`` for the pool: ``kubeconfig``/``context`` when set, else the in-cluster
    service account where the master runs in a pod, else ``$KUBECONFIG`` or ``~/.kube/config``.
    Raises :class:`ResourceManagerError` when none can be loaded."""
    from kubernetes import client
    from kubernetes import config as loaders

    kube_config: Any = loaders  # untyped
    configuration = client.Configuration()
    try:
        if (
            config.kubeconfig is None
            and config.context is None
            and os.environ.get("KUBERNETES_SERVICE_HOST")
        ):
            kube_config.load_incluster_config(client_configuration=configuration)
        else:
            kube_config.load_kube_config(
                config_file=None if config.kubeconfig is None else str(config.kubeconfig),
                context=config.context,
                client_configuration=configuration,
            )
    except Exception as e:
        raise ResourceManagerError(
            f"kubernetes pool: no cluster configuration could be loaded ({error_text(e)}); set "
            "kubernetes.kubeconfig (and context) or run the master in the cluster"
        ) from e
    return client.CoreV1Api(client.ApiClient(configuration))


def error_text(error: BaseException) -> str:
    """An API call's error in one line: its HTTP status and the API server's message."""
    status = getattr(error, "status", None)
    reason = getattr(error, "reason", None)
    body = getattr(error, "body", None)
    if status is not None and reason is not None:
        message = ""
        with contextlib.suppress(Exception):
            message = str(json.loads(body or "{}").get("message", ""))
        return f"HTTP {status} {reason}" + (f": {message}" if message else "")
    text = " ".join(str(error).split())
    return text[:300] or type(error).__name__


def error_status(error: BaseException) -> int | None:
    """An API error's HTTP status; None for any other error."""
    status = getattr(error, "status", None)
    return status if isinstance(status, int) else None


def node_slots(config: KubernetesPoolConfig, node: Any) -> int:
    allocatable = (node.status.allocatable if node.status else None) or {}
    return int(
        quantity(allocatable.get("nvidia.com/gpu" if config.slot_type == "cuda" else "cpu", "0"))
    )


def node_usable(node: Any) -> bool:
    if node.spec is not None and node.spec.unschedulable:
        return False
    conditions = (node.status.conditions if node.status else None) or []
    return any(c.type == "Ready" and c.status == "True" for c in conditions)


def quantity(raw: str) -> float:
    """A Kubernetes quantity (``7910m``, ``32Gi``) as a number; 0 where it is none."""
    from kubernetes import utils

    parse: Any = utils.parse_quantity  # untyped
    try:
        return float(parse(raw))
    except (ValueError, TypeError):
        return 0.0


def log_stamp(text: str) -> tuple[str, int]:
    """An RFC 3339 timestamp as the kubelet writes it, comparable (its trailing zeros of the
    fraction are dropped, so the strings do not compare)."""
    whole, _, fraction = text.rstrip("Z").partition(".")
    return whole, int((fraction + "000000000")[:9] or 0)


def stamp_age(stamp: tuple[str, int]) -> int:
    """Whole seconds since a :func:`log_stamp` (none for one in the future)."""
    when = datetime.fromisoformat(stamp[0]).replace(tzinfo=UTC)
    return max(0, int((datetime.now(UTC) - when).total_seconds()))


class GangServices:
    """The pool's gang Services in its namespace, through ``api`` (a ``CoreV1Api``)."""

    def __init__(self, api: Any, *, pool: str, namespace: str) -> None:
        self.api = api
        self.pool = pool
        self.namespace = namespace

    async def ensure(self, allocation_id: str) -> str | None:
        """Make the allocation's Service, keeping one already there; why it could not be
        made, else None."""
        service, problems = as_model(
            service_manifest(self.pool, allocation_id, self.namespace), "V1Service"
        )
        if problems:
            return "; ".join(problems)
        try:
            await asyncio.to_thread(
                self.api.create_namespaced_service,
                self.namespace,
                service,
                field_validation="Strict",
            )
        except Exception as e:
            if error_status(e) != 409:  # 409: another member made it
                return (
                    f"the headless Service its pods meet through could not be made "
                    f"({error_text(e)}); the master needs create on services in namespace "
                    f"{self.namespace}"
                )
        return None

    async def delete(self, allocation_id: str) -> None:
        await self._delete(service_name(self.pool, allocation_id))

    async def prune(self, live: Collection[str]) -> None:
        """Delete the pool's Services whose allocation is not in ``live`` (has no pod left)."""
        try:
            found = await asyncio.to_thread(
                self.api.list_namespaced_service,
                self.namespace,
                label_selector=f"{POOL_LABEL}={label_value(self.pool)}",
            )
        except Exception as e:
            # Not fatal: a Service left over costs nothing but a name, and open must not fail
            # on a cluster that has never run a gang.
            log.warning("listing the services of pool %s: %s", self.pool, error_text(e))
            return
        for service in found.items or []:
            annotations = service.metadata.annotations or {}
            allocation_id = annotations.get(ALLOCATION_LABEL)
            if annotations.get(POOL_LABEL) == self.pool and allocation_id not in live:
                await self._delete(service.metadata.name)

    async def _delete(self, name: str) -> None:
        try:
            await asyncio.to_thread(self.api.delete_namespaced_service, name, self.namespace)
        except Exception as e:
            if error_status(e) != 404:
                log.warning("deleting service %s: %s", name, error_text(e))


__all__ = [
    "GangServices",
    "error_status",
    "error_text",
    "load_api",
    "log_stamp",
    "node_slots",
    "node_usable",
    "quantity",
    "stamp_age",
]
