"""Running an allocation's processes in a container (``assay agent --container-runtime``).

The container shares the host's network (the trial reaches the master and its peers at the
addresses the agent does) and sees, at the same paths as on the host: the allocation's
directory (its unpacked context, cluster info, output and TensorBoard files), a ``shared_fs``
checkpoint storage, and the experiment's ``bind_mounts`` where it names them. The harness is
the agent's own ``assay`` package, mounted read-only and put on ``PYTHONPATH``: it needs only
the standard library, so the image needs only a Python. The runtime's ``--init`` forwards
signals to the trial (a pause or preemption still checkpoints) and reaps what it starts; the
container is removed when the allocation ends, and one an agent left behind when it died is
removed when it starts again.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import secrets
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import assay
from assay.compat import SHIMS_DIR
from assay.protocol import CONTAINER_RUNTIMES, Container, Mount, Slot

HARNESS_ROOT = "/opt/assay/lib"
"""Where the agent's ``assay`` package appears in the container (``HARNESS_ROOT/assay``)."""
DEFAULT_SHM_SIZE = 4 * 1024**3
"""Bytes of ``/dev/shm`` a container gets unless ``resources.shm_size`` says (Determined's
default; the runtimes' own 64 MiB is too little for PyTorch's data loaders and NCCL)."""
AGENT_LABEL = "assay.agent"
"""The container label naming the agent that started it (:func:`owner`)."""

_PACKAGE_DIR = Path(assay.__file__).resolve().parent
_NAME_UNSAFE = re.compile(r"[^a-zA-Z0-9_.-]")


def container_name(allocation_id: str) -> str:
    """A new container's name: the allocation's id, and a random part, since the runtime's
    names are the host's and agents of other clusters on it number their allocations alike."""
    return f"assay-{_NAME_UNSAFE.sub('-', allocation_id)}-{secrets.token_hex(4)}"


def owner(agent_id: str, work_root: Path) -> str:
    """The value of :data:`AGENT_LABEL` on an agent's containers: its id and its directory,
    which together tell it from any other agent on the host (ids repeat across clusters)."""
    return f"{agent_id}:{work_root}"


def container_pythonpath(experiment_pythonpath: str | None) -> str:
    """``PYTHONPATH`` inside the container: assay's shims, the harness, then the
    experiment's own."""
    shims = f"{HARNESS_ROOT}/assay/{SHIMS_DIR.relative_to(_PACKAGE_DIR).as_posix()}"
    parts = [shims, HARNESS_ROOT]
    if experiment_pythonpath:
        parts += [p for p in experiment_pythonpath.split(":") if p and p not in parts]
    return ":".join(parts)


def storage_dirs(checkpoint_storage: Mapping[str, Any] | None) -> list[str]:
    """The host directories a checkpoint storage keeps checkpoints in (made if missing), which
    a container must see at the same path; none for an object store."""
    storage = checkpoint_storage or {}
    key = {"shared_fs": "host_path", "directory": "container_path"}.get(str(storage.get("type")))
    path = storage.get(key) if key else None
    if not isinstance(path, str) or not path.startswith("/"):
        return []
    Path(path).mkdir(parents=True, exist_ok=True)
    return [path]


def in_bash(script: str) -> list[str]:
    """``script`` run by the image's bash, as on a host, or by its sh where it has no bash."""
    return ["/bin/sh", "-c", 'exec "$(command -v bash || echo /bin/sh)" -c "$1"', "sh", script]


class ContainerRuntime:
    """One runtime command (``podman`` or ``docker``), as the agent's processes call it."""

    def __init__(self, command: str) -> None:
        if command not in CONTAINER_RUNTIMES:
            raise ValueError(
                f"container runtime {command!r} is not one assay runs; use one of "
                + ", ".join(CONTAINER_RUNTIMES)
            )
        self.command = command

    def probe(self) -> str | None:
        """None if the runtime answers; else why it does not, in a line."""
        try:
            done = subprocess.run(
                [self.command, "version"], check=False, capture_output=True, text=True, timeout=60
            )
        except FileNotFoundError:
            return f"there is no {self.command} command on this host's PATH"
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"{self.command} version failed: {exc}"
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
            return f"{self.command} version failed (exit code {done.returncode}): {last}"
        return None

    def run_argv(
        self,
        *,
        name: str,
        owned_by: str,
        container: Container,
        workdir: Path,
        shared: Sequence[str],
        env_names: Sequence[str],
        gpus: Sequence[Slot],
        auth_dir: Path | None,
        command: Sequence[str],
    ) -> list[str]:
        """The command that runs ``command`` in a new container and exits with its code.

        ``shared``: host directories mounted at their own path, read-write. ``env_names``:
        variables the container takes from this command's own environment (so no value is
        on a command line). ``auth_dir``: a directory holding a ``config.json`` with the
        registry credentials."""
        argv = [self.command]
        if auth_dir is not None and self.command == "docker":
            argv += ["--config", str(auth_dir)]
        argv += [
            "run",
            "--rm",
            "--init",
            "--name",
            name,
            "--label",
            f"{AGENT_LABEL}={owned_by}",
            "--network",
            "host",
            "--pull",
            "always" if container.force_pull else "missing",
            # The trial gains no privilege its image's user lacks (no setuid escalation).
            "--security-opt",
            "no-new-privileges",
            "--shm-size",
            str(container.shm_size or DEFAULT_SHM_SIZE),
            "--workdir",
            str(workdir),
            "--mount",
            _mount(Mount(str(_PACKAGE_DIR), f"{HARNESS_ROOT}/assay", read_only=True), workdir),
        ]
        if auth_dir is not None and self.command == "podman":
            argv += ["--authfile", str(auth_dir / "config.json")]
        for path in dict.fromkeys(shared):
            argv += ["--mount", _mount(Mount(path, path), workdir)]
        for mount in container.mounts:
            argv += ["--mount", _mount(mount, workdir)]
        for var in env_names:
            argv += ["--env", var]
        argv += self._gpu_flags(gpus)
        argv.append(container.image)
        argv += command
        return argv

    def _gpu_flags(self, gpus: Sequence[Slot]) -> list[str]:
        """The slots' GPUs passed through: NVIDIA's by CDI name for podman and ``--gpus`` for
        docker; AMD's as the devices ROCm opens (all of them: ROCm picks by its variables)."""
        if any(slot.type == "rocm" for slot in gpus):
            return ["--device", "/dev/kfd", "--device", "/dev/dri"]
        devices = [slot.uuid or slot.id for slot in gpus if slot.type == "cuda"]
        if not devices:
            return []
        if self.command == "podman":
            return [arg for d in devices for arg in ("--device", f"nvidia.com/gpu={d}")]
        return ["--gpus", f'"device={",".join(devices)}"']

    async def remove(self, name: str) -> None:
        """Remove the container whatever its state; nothing if it is already gone."""
        process = await asyncio.create_subprocess_exec(
            self.command,
            "rm",
            "--force",
            name,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        await process.wait()

    def leftovers(self, owned_by: str) -> list[str]:
        """Containers an agent (:func:`owner`) started that are still there (it died before
        removing them)."""
        done = subprocess.run(
            [self.command, "ps", "--all", "--quiet", "--filter", f"label={AGENT_LABEL}={owned_by}"],
            check=False,
            capture_output=True,
            text=True,
            timeout=60,
        )
        return done.stdout.split() if done.returncode == 0 else []

    def remove_now(self, ids: Sequence[str]) -> None:
        if ids:
            subprocess.run(
                [self.command, "rm", "--force", *ids], check=False, capture_output=True, timeout=120
            )


def write_registry_auth(container: Container, directory: Path) -> Path | None:
    """Write the container's registry credentials where the runtime reads them (a Docker
    ``config.json`` in ``directory``, readable by the agent's user only); None without any."""
    auth = container.auth
    if auth is None or not (auth.username or auth.password):
        return None
    server = auth.server or _registry_of(container.image)
    token = base64.b64encode(f"{auth.username}:{auth.password}".encode()).decode()
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = directory / "config.json"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump({"auths": {server: {"auth": token}}}, f)
    return directory


def _registry_of(image: str) -> str:
    """The registry an image reference names (Docker Hub's when its first part is no host)."""
    first, sep, _ = image.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        return first
    return "docker.io"


def _mount(mount: Mount, workdir: Path) -> str:
    """A ``--mount`` value; a relative ``container_path`` is under the working directory, as
    Determined has it."""
    target = mount.container_path
    if not target.startswith("/"):
        target = str(workdir / target)
    parts = [f"type=bind,source={mount.host_path},destination={target}"]
    if mount.read_only:
        parts.append("readonly=true")
    if mount.propagation and mount.propagation != "rprivate":
        parts.append(f"bind-propagation={mount.propagation}")
    return ",".join(parts)
