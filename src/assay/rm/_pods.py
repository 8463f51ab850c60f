"""The pod a Kubernetes pool runs one allocation's start in: pure functions, no API calls.

:func:`pod_problems` and :func:`as_model` read manifests back through the official client's
models (the ``kubernetes`` extra, imported only there) to catch what Kubernetes would refuse.

:func:`pod_manifest` builds the manifest (a plain dict, in the API's camelCase) the manager
hands to ``create_namespaced_pod``. The pod runs ``python -m assay.rm`` (which runs the
start exactly as an agent does and prints its events as JSON lines on stdout, the pod's log),
on the one node the master's scheduler chose (``nodeSelector: kubernetes.io/hostname``).
A gang (a start whose ``distributed`` spans several nodes) is one pod per node, each named
with its node rank, with hostname ``r<rank>`` under the allocation's headless Service
(:func:`service_name`, made by :mod:`assay.rm._k8s_cluster`), and its ``master_addr`` rewritten
to rank 0's DNS name there (:func:`member_start`): the ranks meet through the Service.

Pod specs merge in this order, each later one over the earlier (:func:`merge_pod_specs`):

1. the pool's ``pod_spec`` (``master.yaml``, Determined's ``task_container_defaults``);
2. the experiment's ``environment.pod_spec``;
3. assay's own fields, which always win where they meet: the pod's name, namespace, assay's
   labels and annotations, ``restartPolicy``, ``terminationGracePeriodSeconds``, the
   hostname node selector, a gang member's hostname and subdomain, and in its container the
   image, pull policy, command, the slots' resource, assay's variables and volumes and a gang
   member's rendezvous ports.

Mappings merge key by key; lists are replaced, except ``containers``, ``initContainers``,
``volumes``, a container's ``env`` and ``volumeMounts``, which merge item by item on their
``name`` (``mountPath`` for mounts). Assay's container is the template's one named
``determined-container``, else its first, else a new one named ``determined-container`` (as
Determined does); the template's other containers run beside it as they are.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import re
from dataclasses import replace
from typing import Any

from assay.config import KubernetesPoolConfig
from assay.protocol import AGENT_TOKEN_ENV, RankLayout, Start
from assay.rm._step import ADDRESS_ENV, START_ENV

CONTAINER_NAME = "determined-container"
"""Assay's container in every pod (Determined's name, so its pod specs apply unchanged)."""
WORK_ROOT = "/run/assay"
"""Where the step unpacks the context and keeps the allocation's files (an emptyDir)."""
TOKEN_KEY = "token"
"""The key of the agent-token Secret that holds the token."""

POOL_LABEL = "assay.pool"
ALLOCATION_LABEL = "assay.allocation"
"""Label values are restricted (63 characters of ``[A-Za-z0-9-_.]``): the real ids are in
the annotations of the same names."""
RANK_LABEL = "assay.rank"
"""A gang's pod's node rank (a gang's pods share the allocation's labels)."""
NODE_ANNOTATION = "assay.node"
TRIAL_ANNOTATION = "assay.trial"
CONTAINER_ANNOTATION = "assay.container"
EXIT_ANNOTATION = "assay.exit"
"""An exit the manager decided itself (a start that could not run, a kill before the
container ran), as the JSON of an :class:`assay.protocol.Exited`, so a reopened manager finds
it."""
FINALIZER = "assay.dev/exit-report"
"""Keeps a deleted (killed) pod readable until the master acknowledged its exit."""
HOSTNAME_LABEL = "kubernetes.io/hostname"

_MERGED_BY = {
    "containers": "name",
    "initContainers": "name",
    "volumes": "name",
    "env": "name",
    "volumeMounts": "mountPath",
    "imagePullSecrets": "name",
}
_PROPAGATION = {"rshared": "Bidirectional", "shared": "Bidirectional", "rslave": "HostToContainer"}
_LABEL_VALUE_MAX = 63
_READABLE_MAX = 40


def label_value(text: str) -> str:
    """``text`` as a valid label value: the characters a label allows, at most 63, starting
    and ending with an alphanumeric; a hash of the original keeps different ids apart."""
    clean = re.sub(r"[^A-Za-z0-9_.-]", "-", text).strip("-_.")
    if clean == text and len(clean) <= _LABEL_VALUE_MAX:
        return clean
    digest = hashlib.sha256(text.encode()).hexdigest()[:8]
    return f"{clean[: _LABEL_VALUE_MAX - 9].rstrip('-_.')}-{digest}".lstrip("-")


def pod_name(pool: str, allocation_id: str, node_rank: int | None = None) -> str:
    """The pod of an allocation of a pool (of its node ``node_rank`` for a gang's): the same
    for every start of it (so a second start finds the first's pod), a DNS label (at most 63
    characters), unique to the pool, allocation and node rank."""
    digest = hashlib.sha256(f"{pool}\0{allocation_id}".encode()).hexdigest()[:10]
    suffix = "" if node_rank is None else f"-{node_rank}"
    room = min(_READABLE_MAX, _LABEL_VALUE_MAX - len("assay--") - len(digest) - len(suffix))
    readable = re.sub(r"[^a-z0-9-]+", "-", allocation_id.lower()).strip("-")[:room].strip("-")
    return (f"assay-{readable}-{digest}" if readable else f"assay-{digest}") + suffix


def service_name(pool: str, allocation_id: str) -> str:
    """The headless Service of a gang: a DNS-1035 label (it starts with a letter), the name
    its pods' ``subdomain`` gives."""
    return pod_name(pool, allocation_id)


def gang_layout(message: Start) -> RankLayout | None:
    """The start's share of a gang: its layout where it spans several nodes (pods)."""
    layout = message.distributed
    return layout if layout is not None and layout.num_nodes > 1 else None


def rank_address(pool: str, allocation_id: str, namespace: str, node_rank: int = 0) -> str:
    """The DNS name of a gang's pod of ``node_rank`` (its hostname under the Service). The
    cluster's domain is left to the pods' DNS search path, whatever the cluster calls it."""
    return f"r{node_rank}.{service_name(pool, allocation_id)}.{namespace}.svc"


def member_start(message: Start, *, pool: str, namespace: str) -> Start:
    """The start as its pod runs it: a gang's ``master_addr`` is rank 0's pod (the master's
    choice, a node's address, is not where rank 0 listens: it has a network of its own)."""
    layout = gang_layout(message)
    if layout is None:
        return message
    address = rank_address(pool, message.allocation_id, namespace)
    return replace(message, distributed=replace(layout, master_addr=address))


def service_manifest(pool: str, allocation_id: str, namespace: str) -> dict[str, Any]:
    """The headless Service a gang's pods meet through: it selects them by the allocation's
    label and publishes their addresses before they are ready, so each rank's name resolves
    as soon as its pod has an address (a rendezvous starts before any pod is ready)."""
    labels = {POOL_LABEL: label_value(pool), ALLOCATION_LABEL: label_value(allocation_id)}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": service_name(pool, allocation_id),
            "namespace": namespace,
            "labels": dict(labels),
            "annotations": {POOL_LABEL: pool, ALLOCATION_LABEL: allocation_id},
        },
        "spec": {"clusterIP": "None", "publishNotReadyAddresses": True, "selector": labels},
    }


def experiment_pod_spec(message: Start) -> dict[str, Any] | None:
    """The experiment's ``environment.pod_spec``, where its configuration has one."""
    trial = message.cluster_info.trial
    environment = (trial.config if trial is not None else {}).get("environment")
    spec = environment.get("pod_spec") if isinstance(environment, dict) else None
    return spec if isinstance(spec, dict) and spec else None


def merge_pod_specs(*specs: dict[str, Any] | None) -> dict[str, Any]:
    """The pod manifests merged, each over the ones before it (the rules in the module's
    docstring); the arguments are not changed."""
    merged: dict[str, Any] = {}
    for spec in specs:
        if spec:
            merged = _merge(merged, spec)
    return merged


def _merge(base: Any, over: Any, key: str = "") -> Any:
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for k, v in over.items():
            out[k] = _merge(base[k], v, k) if k in base else copy.deepcopy(v)
        return out
    by = _MERGED_BY.get(key)
    if by and isinstance(base, list) and isinstance(over, list):
        out_list = [copy.deepcopy(item) for item in base]
        for item in over:
            name = item.get(by) if isinstance(item, dict) else None
            at = next(
                (
                    i
                    for i, old in enumerate(out_list)
                    if name is not None and isinstance(old, dict) and old.get(by) == name
                ),
                None,
            )
            if at is None:
                out_list.append(copy.deepcopy(item))
            else:
                out_list[at] = _merge(out_list[at], item)
        return out_list
    return copy.deepcopy(over)


def _assay_container(spec: dict[str, Any]) -> dict[str, Any]:
    containers = spec.setdefault("containers", [])
    if not isinstance(containers, list):
        raise ValueError(f"pod_spec: spec.containers must be a list, got {type(containers)}")
    for container in containers:
        if isinstance(container, dict) and container.get("name") == CONTAINER_NAME:
            return container
    if containers and isinstance(containers[0], dict):
        first: dict[str, Any] = containers[0]
        first.setdefault("name", CONTAINER_NAME)
        return first
    made: dict[str, Any] = {"name": CONTAINER_NAME}
    containers.insert(0, made)
    return made


def slot_resources(config: KubernetesPoolConfig, slots: int) -> dict[str, str]:
    """What ``slots`` slots of the pool are as a container's resources (limits and requests
    alike: GPUs cannot be overcommitted, and a CPU slot is a whole core)."""
    if slots <= 0:
        return {}
    return {("nvidia.com/gpu" if config.slot_type == "cuda" else "cpu"): str(slots)}


def _volumes(
    message: Start, config: KubernetesPoolConfig
) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(volume, its mount in assay's container) for the work root, /dev/shm, the checkpoint
    claim and the start's bind mounts."""
    shm: dict[str, Any] = {"medium": "Memory"}
    if message.container is not None and message.container.shm_size > 0:
        shm["sizeLimit"] = str(message.container.shm_size)
    out: list[tuple[dict[str, Any], dict[str, Any]]] = [
        ({"name": "assay-work", "emptyDir": {}}, {"name": "assay-work", "mountPath": WORK_ROOT}),
        ({"name": "assay-shm", "emptyDir": shm}, {"name": "assay-shm", "mountPath": "/dev/shm"}),
    ]
    storage = message.cluster_info.checkpoint_storage or {}
    host_path = storage.get("host_path")
    if (
        config.checkpoint_claim
        and storage.get("type", "shared_fs") == "shared_fs"
        and isinstance(host_path, str)
        and host_path
    ):
        out.append(
            (
                {
                    "name": "assay-checkpoints",
                    "persistentVolumeClaim": {"claimName": config.checkpoint_claim},
                },
                {"name": "assay-checkpoints", "mountPath": host_path},
            )
        )
    for i, mount in enumerate(message.container.mounts if message.container else []):
        name = f"assay-mount-{i}"
        volume_mount: dict[str, Any] = {
            "name": name,
            "mountPath": mount.container_path,
            "readOnly": mount.read_only,
        }
        if mount.propagation in _PROPAGATION:
            volume_mount["mountPropagation"] = _PROPAGATION[mount.propagation]
        out.append(({"name": name, "hostPath": {"path": mount.host_path}}, volume_mount))
    return out


def pod_manifest(
    message: Start,
    *,
    config: KubernetesPoolConfig,
    pool: str,
    master_url: str,
    node_name: str,
) -> dict[str, Any]:
    """The pod that runs ``message`` on the Kubernetes node ``node_name`` for the pool.

    Raises ValueError (one line: what is wrong, where) when the pod specs to merge are not
    shaped like pod manifests at all; whether every field is one Kubernetes knows is checked
    against the client's models by :func:`pod_problems`."""
    message = member_start(message, pool=pool, namespace=config.namespace)
    allocation_id = message.allocation_id
    gang = gang_layout(message)
    for where, spec in (("pool", config.pod_spec), ("experiment", experiment_pod_spec(message))):
        if spec and not isinstance(spec.get("spec", {}), dict):
            raise ValueError(f"the {where}'s pod_spec: spec must be a mapping (a PodSpec)")
    pod = merge_pod_specs(config.pod_spec, experiment_pod_spec(message))
    pod["apiVersion"] = "v1"
    pod["kind"] = "Pod"
    meta = pod.setdefault("metadata", {})
    spec = pod.setdefault("spec", {})
    if not isinstance(meta, dict):
        raise ValueError("pod_spec: metadata must be a mapping (an ObjectMeta)")
    for drop in ("generateName", "namespace", "resourceVersion", "uid"):
        meta.pop(drop, None)
    meta["name"] = pod_name(pool, allocation_id, gang.node_rank if gang else None)
    meta["namespace"] = config.namespace
    meta["labels"] = {
        **(meta.get("labels") or {}),
        POOL_LABEL: label_value(pool),
        ALLOCATION_LABEL: label_value(allocation_id),
        **({RANK_LABEL: str(gang.node_rank)} if gang else {}),
    }
    container = _assay_container(spec)
    meta["annotations"] = {
        **(meta.get("annotations") or {}),
        POOL_LABEL: pool,
        ALLOCATION_LABEL: allocation_id,
        NODE_ANNOTATION: node_name,
        TRIAL_ANNOTATION: str(message.trial_id),
        CONTAINER_ANNOTATION: str(container["name"]),
    }
    meta["finalizers"] = [*(f for f in meta.get("finalizers") or [] if f != FINALIZER), FINALIZER]

    spec["restartPolicy"] = "Never"
    spec["terminationGracePeriodSeconds"] = round(config.kill_grace)
    spec["nodeSelector"] = {
        **(spec.get("nodeSelector") or {}),
        **config.node_selector,
        HOSTNAME_LABEL: node_name,
    }
    if gang is not None:
        spec["hostname"] = f"r{gang.node_rank}"
        spec["subdomain"] = service_name(pool, allocation_id)
    if config.service_account:
        spec["serviceAccountName"] = config.service_account
    if config.image_pull_secrets:
        spec["imagePullSecrets"] = _merge(
            spec.get("imagePullSecrets") or [],
            [{"name": s} for s in config.image_pull_secrets],
            "imagePullSecrets",
        )

    image = message.container.image if message.container else config.default_image
    if not image:
        # Refused at submission where the master can tell; a start that gets here ends.
        raise ValueError(
            "it names no environment.image, and the pool has no kubernetes.default_image "
            "(an image with Python 3.11 or later and assay installed)"
        )
    container["image"] = image
    container["imagePullPolicy"] = (
        "Always"
        if message.container is not None and message.container.force_pull
        else "IfNotPresent"
    )
    container["command"] = [
        "python",
        "-m",
        "assay.rm",
        "--master",
        master_url,
        "--work-root",
        WORK_ROOT,
        "--kill-grace",
        str(config.kill_grace),
    ]
    container.pop("args", None)
    if gang is not None:
        # Rank 0's rendezvous ports, declared (the pod's own network: any free port is free).
        ports = [
            {"name": "assay-torch", "containerPort": gang.master_port, "protocol": "TCP"},
            {"name": "assay-rdzv", "containerPort": gang.rendezvous_port, "protocol": "TCP"},
        ]
        ours = {p[k] for p in ports for k in ("name", "containerPort")}
        kept = [
            p
            for p in container.get("ports") or []
            if not isinstance(p, dict) or not {p.get("name"), p.get("containerPort")} & ours
        ]
        container["ports"] = [*kept, *ports]
    env: list[dict[str, Any]] = [{"name": k, "value": v} for k, v in message.env.items()]
    env.append({"name": START_ENV, "value": json.dumps(message.to_dict(), separators=(",", ":"))})
    # The pod's own address, where a task's server listens and the master's proxy reaches it.
    env.append({"name": ADDRESS_ENV, "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}})
    if config.token_secret:
        env.append(
            {
                "name": AGENT_TOKEN_ENV,
                "valueFrom": {"secretKeyRef": {"name": config.token_secret, "key": TOKEN_KEY}},
            }
        )
    container["env"] = _merge(container.get("env") or [], env, "env")

    wanted = slot_resources(config, len(message.slots))
    resources = container.setdefault("resources", {})
    for kind in ("limits", "requests"):
        if wanted:
            resources[kind] = {**(resources.get(kind) or {}), **wanted}

    volumes = _volumes(message, config)
    spec["volumes"] = _merge(spec.get("volumes") or [], [v for v, _ in volumes], "volumes")
    container["volumeMounts"] = _merge(
        container.get("volumeMounts") or [], [m for _, m in volumes], "volumeMounts"
    )
    return pod


def pod_problems(manifest: dict[str, Any]) -> list[str]:
    """What in ``manifest`` the client's ``V1Pod`` model rejects (a wrong type, a missing
    required field) or does not know (a misspelt key, which the API server would drop or
    refuse): one line each, with its path; empty when the manifest is a valid pod."""
    return as_pod(manifest)[1]


def as_pod(manifest: dict[str, Any]) -> tuple[Any, list[str]]:
    """``manifest`` as the client's ``V1Pod`` (None where it is not one) and its problems
    (:func:`pod_problems`). Calls no API."""
    return as_model(manifest, "V1Pod")


def as_model(manifest: dict[str, Any], model: str) -> tuple[Any, list[str]]:
    """``manifest`` as the client's model named ``model`` (``V1Pod``, ``V1Deployment``) and
    what in it the model rejects or does not know, one line each; calls no API."""
    from kubernetes import client

    api = client.ApiClient()
    what = model.removeprefix("V1")
    try:
        # The client's own path from a response's JSON to its models: public in name only
        # through ``deserialize``, whose signature changed between releases.
        made = getattr(api, "_ApiClient__deserialize")(manifest, model)  # noqa: B009
    except Exception as e:
        return None, [f"the {what} spec is not a valid Kubernetes {what}: {_validation_message(e)}"]
    serialize: Any = api.sanitize_for_serialization  # untyped
    return made, [
        f"the {what} spec has {path}, which is not a field of a Kubernetes {what}; check its "
        "spelling (fields are camelCase, as in kubectl's manifests)"
        for path in _unknown_keys(manifest, serialize(made), "")
    ]


def _validation_message(error: Exception) -> str:
    errors = getattr(error, "errors", None)
    if callable(errors):
        with contextlib.suppress(Exception):
            first = errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ()))
            model = getattr(error, "title", "")
            return f"{model} {where}: {first.get('msg', '')}".strip()
    return " ".join(str(error).split())[:300] or type(error).__name__


def _unknown_keys(given: Any, known: Any, path: str) -> list[str]:
    if isinstance(given, dict):
        known_map = known if isinstance(known, dict) else {}
        out: list[str] = []
        for key, value in given.items():
            here = f"{path}.{key}" if path else str(key)
            if value is None:
                continue
            if key not in known_map:
                out.append(here)
            else:
                out.extend(_unknown_keys(value, known_map[key], here))
        return out
    if isinstance(given, list) and isinstance(known, list):
        return [
            p
            for i, (g, k) in enumerate(zip(given, known, strict=False))
            for p in _unknown_keys(g, k, f"{path}[{i}]")
        ]
    return []


DISRUPTED_REASONS = frozenset({"Evicted", "NodeLost", "Shutdown", "NodeShutdown", "Terminated"})
"""Pod status reasons of a pod its node or the cluster ended (an eviction under pressure, a
node lost or shut down): not the trial's doing."""


def disrupted(pod: Any) -> bool:
    """Whether the cluster ended ``pod`` (Kubernetes' ``DisruptionTarget`` condition, which a
    Job's ``podFailurePolicy`` ignores for the same reason, or one of
    :data:`DISRUPTED_REASONS`): the trial's loss then costs no ``max_restarts``."""
    status = pod.status
    if status is None:
        return False
    if status.reason in DISRUPTED_REASONS:
        return True
    return any(c.type == "DisruptionTarget" and c.status == "True" for c in status.conditions or [])


__all__ = [
    "ALLOCATION_LABEL",
    "CONTAINER_ANNOTATION",
    "CONTAINER_NAME",
    "DISRUPTED_REASONS",
    "EXIT_ANNOTATION",
    "FINALIZER",
    "NODE_ANNOTATION",
    "POOL_LABEL",
    "RANK_LABEL",
    "TOKEN_KEY",
    "TRIAL_ANNOTATION",
    "WORK_ROOT",
    "as_model",
    "as_pod",
    "disrupted",
    "experiment_pod_spec",
    "gang_layout",
    "label_value",
    "member_start",
    "merge_pod_specs",
    "pod_manifest",
    "pod_name",
    "pod_problems",
    "rank_address",
    "service_manifest",
    "service_name",
    "slot_resources",
]
