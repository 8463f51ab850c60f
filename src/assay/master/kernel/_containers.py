"""Trials that name an image (``environment.image``): the container their start message
carries, the agents that may run them, and the refusal of one no agent of its pool could run.

The scheduler's policies place a request on agents carrying its one label. A trial in a
container needs an agent that carries its ``agent_label`` (if any) *and* runs containers, so an
agent with a container runtime also offers each of its labels, and no label, joined with
:data:`_CONTAINERS`, and such a trial asks for that joined label.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from assay.config import (
    CONTAINER_ONLY,
    REGISTRY_AUTH_SECRET,
    ExperimentConfig,
    JobSpec,
    ResourcePoolConfig,
)
from assay.errors import ErrorDetail
from assay.protocol import Container, Mount, RegistryAuth

_CONTAINERS = "\x1fcontainers"
"""Joined to a label: "and runs containers" (a control character no label given on a command
line or in a config carries)."""
_DEVICES = ("cpu", "cuda", "rocm")


def trial_image(config: ExperimentConfig, device: str = "") -> str | None:
    """The image a trial on ``device`` runs in: the one named for it, else any one named
    (a config naming an image for one device type runs every trial in a container)."""
    env = config.environment
    named = env.image_for(device) if device else None
    return named or next((i for d in _DEVICES if (i := env.image_for(d))), None)


def trial_container(config: ExperimentConfig, device: str) -> Container | None:
    """The container of a trial on ``device`` (cpu, cuda or rocm); None to run it bare."""
    image = trial_image(config, device)
    if image is None:
        return None
    env = config.environment
    return Container(
        image=image,
        force_pull=env.force_pull_image,
        shm_size=config.resources.shm_size or 0,
        mounts=[
            Mount(m.host_path, m.container_path, m.read_only, m.propagation)
            for m in config.bind_mounts
        ],
        auth=registry_auth(env.registry_auth.model_dump() if env.registry_auth else {}),
    )


def job_container(spec: JobSpec, image: str) -> Container:
    """The container of a job's instance in ``image``, with its command's settings."""
    options = spec.container_options
    raw = spec.secrets.get(REGISTRY_AUTH_SECRET)
    return Container(
        image=image,
        force_pull=options.force_pull,
        shm_size=options.shm_size,
        mounts=[
            Mount(m.host_path, m.container_path, m.read_only, m.propagation) for m in options.mounts
        ],
        auth=registry_auth(json.loads(raw) if raw else {}),
    )


def registry_auth(auth: dict[str, Any]) -> RegistryAuth | None:
    """Credentials from Determined's ``registry_auth`` (Docker's form, with its base64
    ``auth``, included); None without any."""
    username, password = str(auth.get("username") or ""), str(auth.get("password") or "")
    if not (username or password) and auth.get("auth"):
        # Docker's own form: base64 of "username:password".
        username, _, password = _decoded(str(auth["auth"])).partition(":")
    if not (username or password):
        return None
    server = str(auth.get("serveraddress") or auth.get("server") or "")
    return RegistryAuth(username=username, password=password, server=server)


def _decoded(token: str) -> str:
    try:
        return base64.b64decode(token, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return ""


def offered_labels(labels: frozenset[str], container_runtime: str) -> frozenset[str]:
    """The labels an agent offers to requests: its own, and with a container runtime each
    of them (and no label) joined with "runs containers"."""
    if not container_runtime:
        return labels
    return labels | {_with_containers(label) for label in (*labels, None)}


def request_label(label: str | None, containers: bool) -> str | None:
    """The label a trial's request asks for: its ``agent_label``, joined with "runs
    containers" when the trial runs in one."""
    return _with_containers(label) if containers else label


def _with_containers(label: str | None) -> str:
    return (label or "") + _CONTAINERS


def container_problem(
    config: ExperimentConfig,
    pool: str,
    pool_runs_containers: bool,
    *,
    autoscaled: bool = False,
    pool_type: str = "agents",
) -> ErrorDetail | None:
    """Why the experiment's trials could never run: they name an image, and no agent of
    their pool runs containers (a Slurm pool runs processes on its nodes). None when they
    could, and for an ``autoscaled`` pool, whose agents are yet to be launched (whether they
    run containers is theirs to say)."""
    image = trial_image(config)
    if image is None or pool_runs_containers or autoscaled:
        return None
    if pool_type == "slurm":
        return ErrorDetail(
            "environment.image",
            f"names {image!r}, and resource pool {pool!r} is a Slurm pool, whose jobs run as "
            "processes on its nodes with their own Python; leave environment.image out, or "
            "submit to a pool of agents started with --container-runtime podman (or docker)",
        )
    return ErrorDetail(
        "environment.image",
        f"names {image!r}, and no agent of resource pool {pool!r} runs containers, so no trial "
        "could start; start the pool's agents with `assay agent --container-runtime "
        "podman` (or docker; a cluster of `assay up`: `assay down`, then "
        "`ASSAY_CONTAINER_RUNTIME=podman assay up`), or leave environment.image out to run "
        "the trials with the agents' own Python",
    )


def pull_problem(config: ExperimentConfig, pool: ResourcePoolConfig | None) -> ErrorDetail | None:
    """Why the experiment's registry credentials could not be used: a Kubernetes pool pulls
    with the pull secrets its configuration names, not with credentials in a config."""
    if pool is None or pool.type != "kubernetes" or config.environment.registry_auth is None:
        return None
    return ErrorDetail(
        "environment.registry_auth",
        f"resource pool {pool.pool_name!r} runs pods, which pull with the image pull secrets "
        "the pool names (kubernetes.image_pull_secrets in master.yaml); create a secret of "
        "type kubernetes.io/dockerconfigjson, name it there, and leave registry_auth out",
    )


def pod_image_problem(
    config: ExperimentConfig, pool: ResourcePoolConfig | None
) -> ErrorDetail | None:
    """Why the experiment's trials could not run on a Kubernetes pool: a pod needs an image,
    and neither the config nor the pool names one."""
    if pool is None or pool.type != "kubernetes" or trial_image(config) is not None:
        return None
    if pool.kubernetes is not None and pool.kubernetes.default_image:
        return None
    return ErrorDetail(
        "environment.image",
        f"is required on resource pool {pool.pool_name!r}, which runs each trial in a pod and "
        "names no kubernetes.default_image: name an image with Python 3.11 or later and assay "
        "installed",
    )


def slurm_problem(config: ExperimentConfig, pool: ResourcePoolConfig | None) -> ErrorDetail | None:
    """Why the experiment's ``slurm.slots_per_node`` cannot be honoured: on a Slurm pool the
    master places a trial's slots on nodes itself (elsewhere the section does not apply)."""
    section = config.slurm
    if pool is None or pool.type != "slurm" or section is None or section.slots_per_node is None:
        return None
    return ErrorDetail(
        "slurm.slots_per_node",
        f"is not supported on Slurm pool {pool.pool_name!r}: the master places a trial's "
        "slots on the nodes itself (a trial fills one node before it spans several); leave "
        "it out, or set the pool's slurm.slots_per_node in master.yaml",
    )


def runs_containers(pool: ResourcePoolConfig | None, agents_say: bool) -> bool:
    """Whether a pool runs allocations in containers: every Kubernetes pool does (a pod is
    one); an agents' pool does when one of its agents said it has a runtime."""
    return (pool is not None and pool.type == "kubernetes") or agents_say


def job_in_containers(spec: JobSpec, pool_runs_containers: bool) -> JobSpec:
    """The job as it will run: in containers of its images when an agent of its pool runs
    containers (only those agents are then given its instances), else as processes on the
    agents with its images recorded, as its notes say."""
    images = sorted({image for role in spec.roles if (image := spec.image_of(role))})
    if not images or not pool_runs_containers:
        return spec
    notes = [n for n in spec.notes if "): recorded as the " not in n and CONTAINER_ONLY not in n]
    notes.append(
        f"its instances run in containers of {', '.join(images)}, on the agents of pool "
        f"{spec.pool!r} that run containers"
    )
    return spec.model_copy(update={"containers": True, "notes": notes})


def job_label(spec: JobSpec) -> str | None:
    """The label a job's instances ask for."""
    return request_label(spec.agent_label, spec.containers)
