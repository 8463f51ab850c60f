"""The ``environment`` section (image and environment variables per device type) and
``bind_mounts``."""

from __future__ import annotations

import posixpath
from typing import Any

from assay.config._base import ConfigModel, OpenSection, Problem, show
from assay.errors import InvalidRequest

DEVICE_TYPES = ("cpu", "cuda", "rocm")


def device_key(device: str) -> str:
    """The key of a device type in per-device maps; ``gpu`` is the old name of ``cuda``."""
    key = "cuda" if device == "gpu" else device
    if key not in DEVICE_TYPES:
        raise InvalidRequest(
            f"unknown device type {device!r}; expected one of: cpu, cuda, rocm (or gpu for cuda)"
        )
    return key


class _PerDevice(ConfigModel):
    """A map by device type that also accepts Determined's old ``gpu`` key for ``cuda``."""

    @classmethod
    def _cross_checks(cls, data: dict[str, Any]) -> list[Problem]:
        if "gpu" in data and "cuda" in data and data["gpu"] != data["cuda"]:
            return [(("gpu",), "gpu is the old name of cuda; give one of them, not both")]
        return []

    @classmethod
    def _normalize(cls, data: dict[str, Any]) -> dict[str, Any]:
        if "gpu" not in data:
            return data
        out = dict(data)
        gpu = out.pop("gpu")
        out.setdefault("cuda", gpu)
        return out


class EnvironmentImage(_PerDevice):
    """The container image per device type; None leaves the choice to the master."""

    cpu: str | None = None
    cuda: str | None = None
    rocm: str | None = None


class EnvironmentVariables(_PerDevice):
    """``KEY=VALUE`` entries per device type."""

    cpu: list[str] = []
    cuda: list[str] = []
    rocm: list[str] = []


class EnvironmentConfig(ConfigModel):
    """Where and how trial processes run.

    ``image`` and ``environment_variables`` accept Determined's shorthand forms (one value for
    every device type) and are kept as per-device maps. ``pod_spec``, ``registry_auth``,
    ``ports``, ``proxy_ports`` and the capabilities are accepted for compatibility only.
    """

    image: EnvironmentImage = EnvironmentImage()
    environment_variables: EnvironmentVariables = EnvironmentVariables()
    force_pull_image: bool = False
    pod_spec: dict[str, Any] | None = None
    registry_auth: OpenSection | None = None
    ports: dict[str, int] = {}
    proxy_ports: list[dict[str, Any]] = []
    add_capabilities: list[str] = []
    drop_capabilities: list[str] = []

    @classmethod
    def _cross_checks(cls, data: dict[str, Any]) -> list[Problem]:
        problems: list[Problem] = []
        image = data.get("image")
        if image is not None and not isinstance(image, str | dict):
            problems.append(
                (
                    ("image",),
                    f"must be an image name, or a map of cpu/cuda/rocm to image names, "
                    f"got {show(image)}",
                )
            )
        variables = data.get("environment_variables")
        if isinstance(variables, list):
            problems.extend(
                (("environment_variables", i), f"must be a KEY=VALUE string, got {show(v)}")
                for i, v in enumerate(variables)
                if not isinstance(v, str)
            )
        elif variables is not None and not isinstance(variables, dict):
            problems.append(
                (
                    ("environment_variables",),
                    "must be a list of KEY=VALUE strings, or a map of cpu/cuda/rocm to such "
                    f"lists, got {show(variables)}",
                )
            )
        return problems

    @classmethod
    def _normalize(cls, data: dict[str, Any]) -> dict[str, Any]:
        out = dict(data)
        image = out.get("image")
        if isinstance(image, str):
            out["image"] = dict.fromkeys(DEVICE_TYPES, image)
        elif image is not None and not isinstance(image, dict):
            del out["image"]  # reported by _cross_checks
        variables = out.get("environment_variables")
        if isinstance(variables, list) and all(isinstance(v, str) for v in variables):
            out["environment_variables"] = dict.fromkeys(DEVICE_TYPES, variables)
        elif variables is not None and not isinstance(variables, dict):
            del out["environment_variables"]  # reported by _cross_checks
        return out

    def variables(self, device: str = "cpu") -> dict[str, str]:
        """The environment a trial on ``device`` (cpu, cuda, rocm or gpu) gets from the config.

        Later entries win. An entry without ``=`` is skipped: in Docker it means "pass the
        variable through from the host", which a process started by the agent gets anyway.
        """
        entries: list[str] = getattr(self.environment_variables, device_key(device))
        env: dict[str, str] = {}
        for entry in entries:
            key, sep, value = entry.partition("=")
            if sep and key:
                env[key] = value
        return env

    def image_for(self, device: str = "cpu") -> str | None:
        """The image named for ``device`` (cpu, cuda, rocm or gpu), or None if none was."""
        image: str | None = getattr(self.image, device_key(device))
        return image


class BindMount(ConfigModel):
    """A host directory made visible to trials."""

    host_path: str
    container_path: str
    read_only: bool = False
    propagation: str = "rprivate"

    @classmethod
    def _cross_checks(cls, data: dict[str, Any]) -> list[Problem]:
        problems: list[Problem] = []
        host, container = data.get("host_path"), data.get("container_path")
        if isinstance(host, str) and not posixpath.isabs(host):
            problems.append((("host_path",), f"must be an absolute path, got {show(host)}"))
        if container == ".":
            problems.append((("container_path",), 'must not be "." (give a directory name)'))
        return problems
