"""The ``environment`` section (image and environment variables per device type) and
``bind_mounts``."""

from __future__ import annotations

import posixpath
from typing import Annotated, Any

from pydantic import Discriminator, PlainValidator, Tag, TypeAdapter, ValidationError

from assay.config._base import ConfigModel, OpenSection, Problem, config_error, show
from assay.config._errors import problems_from
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


_ENTRY_WORDS = "a KEY=VALUE string or a map {name, value, secret}"


class EnvironmentVariable(ConfigModel):
    """An entry written as a map, which can mark its value secret: the trial gets the value,
    the API and the trial's logs show ``********`` instead."""

    name: str
    value: str
    secret: bool = False

    @classmethod
    def _cross_checks(cls, data: dict[str, Any]) -> list[Problem]:
        name = data.get("name")
        if isinstance(name, str) and (not name or "=" in name):
            return [(("name",), f"must be a variable name without '=', got {show(name)}")]
        return []


def _entry_string(value: Any) -> str:
    if isinstance(value, str):
        if value.startswith("="):
            # It would set nothing: a variable needs a name.
            raise config_error(
                f"has no variable name before '=', got {show(value)}; write NAME=VALUE"
            )
        return value
    raise config_error(f"must be {_ENTRY_WORDS}, got {show(value)}")


def _entry_form(value: Any) -> str:
    return "<map>" if isinstance(value, dict | EnvironmentVariable) else "<string>"


EnvironmentEntry = Annotated[
    Annotated[str, PlainValidator(_entry_string), Tag("<string>")]
    | Annotated[EnvironmentVariable, Tag("<map>")],
    Discriminator(_entry_form),
]
"""One ``environment_variables`` entry: Determined's ``KEY=VALUE`` string, or the map form."""

_ENTRY = TypeAdapter(EnvironmentEntry)


def _entry_problems(entry: Any) -> list[Problem]:
    """The problems of one entry, relative to it (``()`` or ``("name",)``)."""
    try:
        _ENTRY.validate_python(entry)
    except ValidationError as exc:
        return [
            (tuple(p for p in (d.path,) if p), d.message)
            for d in problems_from(exc, EnvironmentEntry)
        ]
    return []


class EnvironmentVariables(_PerDevice):
    """The entries per device type."""

    cpu: list[EnvironmentEntry] = []
    cuda: list[EnvironmentEntry] = []
    rocm: list[EnvironmentEntry] = []


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
            # Checked here, once, rather than after the list is copied to every device type,
            # which would report each problem three times under the wrong paths.
            problems.extend(
                (("environment_variables", i, *loc), message)
                for i, entry in enumerate(variables)
                for loc, message in _entry_problems(entry)
            )
        elif variables is not None and not isinstance(variables, dict):
            problems.append(
                (
                    ("environment_variables",),
                    f"must be a list of entries ({_ENTRY_WORDS}), or a map of cpu/cuda/rocm "
                    f"to such lists, got {show(variables)}",
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
        if isinstance(variables, list) and not any(map(_entry_problems, variables)):
            out["environment_variables"] = dict.fromkeys(DEVICE_TYPES, variables)
        elif variables is not None and not isinstance(variables, dict):
            del out["environment_variables"]  # reported by _cross_checks
        return out

    def variables(self, device: str = "cpu") -> dict[str, str]:
        """The environment a trial on ``device`` (cpu, cuda, rocm or gpu) gets from the config.

        Later entries win. An entry without ``=`` is skipped: in Docker it means "pass the
        variable through from the host", which a process started by the agent gets anyway.
        """
        entries: list[str | EnvironmentVariable] = getattr(
            self.environment_variables, device_key(device)
        )
        env: dict[str, str] = {}
        for entry in entries:
            if isinstance(entry, EnvironmentVariable):
                env[entry.name] = entry.value
                continue
            key, sep, value = entry.partition("=")
            if sep and key:
                env[key] = value
        return env

    def image_for(self, device: str = "cpu") -> str | None:
        """The image named for ``device`` (cpu, cuda, rocm or gpu), or None if none was."""
        image: str | None = getattr(self.image, device_key(device))
        return image


PROPAGATIONS = ("rprivate", "private", "rshared", "shared", "rslave", "slave")
"""The bind propagation modes a mount may ask for (Docker's and podman's)."""


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
        for key in ("host_path", "container_path"):
            value = data.get(key)
            if isinstance(value, str) and ("," in value or "\n" in value):
                # A container runtime's --mount option is a comma-separated list.
                why = f"must not contain a comma or a newline, got {show(value)}"
                problems.append(((key,), why))
        propagation = data.get("propagation", "rprivate")
        if propagation not in PROPAGATIONS:
            problems.append(
                (
                    ("propagation",),
                    f"must be one of {', '.join(PROPAGATIONS)}, got {show(propagation)}",
                )
            )
        return problems
