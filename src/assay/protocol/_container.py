"""What a start message says about the container its processes run in (``environment.image``).

The master fills it from the experiment's configuration; an agent given a container runtime
(``assay agent --container-runtime podman``) runs the processes in it, and only such an agent is
ever given one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from assay.protocol._fields import Fields

CONTAINER_RUNTIMES = ("podman", "docker")
"""The runtimes an agent can be given, by the name of their command."""


@dataclass(frozen=True)
class Mount:
    """A host directory made visible in the container (one of ``bind_mounts``)."""

    host_path: str
    container_path: str
    read_only: bool = False
    propagation: str = "rprivate"

    def to_dict(self) -> dict[str, Any]:
        return {
            "host_path": self.host_path,
            "container_path": self.container_path,
            "read_only": self.read_only,
            "propagation": self.propagation,
        }

    @classmethod
    def from_dict(cls, raw: object, where: str) -> Mount:
        f = Fields(raw, where)
        return cls(
            host_path=f.text("host_path"),
            container_path=f.text("container_path"),
            read_only=f.flag("read_only", False),
            propagation=f.text("propagation", "rprivate"),
        )


@dataclass(frozen=True)
class RegistryAuth:
    """Credentials for the image's registry (Determined's ``environment.registry_auth``)."""

    username: str = ""
    password: str = ""
    server: str = ""
    """The registry they are for; empty: the image's own registry."""

    def to_dict(self) -> dict[str, Any]:
        return {"username": self.username, "password": self.password, "server": self.server}

    @classmethod
    def from_dict(cls, raw: object, where: str) -> RegistryAuth:
        f = Fields(raw, where)
        return cls(
            username=f.text("username", ""),
            password=f.text("password", ""),
            server=f.text("server", ""),
        )


@dataclass(frozen=True)
class Container:
    """Run the allocation's processes in a container made from ``image``."""

    image: str
    force_pull: bool = False
    """Pull the image even when the agent has it (``environment.force_pull_image``)."""
    mounts: list[Mount] = field(default_factory=list)
    auth: RegistryAuth | None = None
    shm_size: int = 0
    """Bytes of ``/dev/shm`` (``resources.shm_size``); 0: the agent's default."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "image": self.image,
            "force_pull": self.force_pull,
            "shm_size": self.shm_size,
            "mounts": [m.to_dict() for m in self.mounts],
            "auth": None if self.auth is None else self.auth.to_dict(),
        }

    @classmethod
    def from_dict(cls, raw: object, where: str) -> Container:
        f = Fields(raw, where)
        auth = f.raw.get("auth")
        return cls(
            image=f.text("image"),
            force_pull=f.flag("force_pull", False),
            shm_size=f.integer("shm_size", 0, minimum=0),
            mounts=[
                Mount.from_dict(m, f"{f.path('mounts')}[{i}]")
                for i, m in enumerate(f.items("mounts", []))
            ],
            auth=None if auth is None else RegistryAuth.from_dict(auth, f.path("auth")),
        )
