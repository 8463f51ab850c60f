"""The ``resources`` section: slots, scheduling weight and priority, pool, shared memory,
devices."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BeforeValidator, Field

from assay.config._base import ConfigModel, config_error, show
from assay.config._limits import DB_INT_MAX, INT64_MAX, MAX_NAME, MAX_PATH, MAX_SLOTS_PER_TRIAL

# A size is a number and an optional unit: "1.5 gb", "512m", "1219021 b", "1gib". A unit of
# several letters must end in "b", so "1 gi" is refused, as Determined refuses it.
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(?:([kmgtp])(i?b)?|(b))?\s*$", re.IGNORECASE)
_POWERS = {"k": 1, "m": 2, "g": 3, "t": 4, "p": 5}


def parse_memory_size(value: Any) -> int:
    """Bytes in ``value``: an integer, or a string such as ``"1.5 gb"``.

    Units are binary (``1 kb`` is 1024 bytes), as Docker reads ``--shm-size``.
    """
    if isinstance(value, bool):
        raise config_error(f"must be a valid memory size, got {show(value)}")
    if isinstance(value, int):
        if value < 0:
            raise config_error(f"must be a valid memory size (>= 0 bytes), got {value}")
        if value > INT64_MAX:
            raise config_error(f"must be a memory size under 8 EiB (2^63 bytes), got {show(value)}")
        return value
    if not isinstance(value, str):
        raise config_error(f"must be a valid memory size, got {show(value)}")
    match = _SIZE.match(value)
    if match is None:
        raise config_error(
            f'must be a valid memory size such as 1073741824, "1 gb" or "512m", got {show(value)}'
        )
    number, prefix = float(match.group(1)), (match.group(2) or "").lower()
    size = number * 1024 ** _POWERS.get(prefix, 0)
    if not size <= INT64_MAX:  # also catches inf, from a number of hundreds of digits
        raise config_error(f"must be a memory size under 8 EiB (2^63 bytes), got {show(value)}")
    return int(size)


MemorySize = Annotated[int, BeforeValidator(parse_memory_size)]
Name = Annotated[str, Field(max_length=MAX_NAME)]
PathText = Annotated[str, Field(max_length=MAX_PATH)]


def _device_input(value: Any) -> Any:
    # "/host:/container[:mode]" is Docker's short form of a device.
    if not isinstance(value, str):
        return value
    parts = value.split(":")
    if len(parts) not in (2, 3) or not all(parts):
        raise config_error(
            f'a device must look like "/host/path:/container/path[:mode]", got {show(value)}'
        )
    device: dict[str, Any] = {"host_path": parts[0], "container_path": parts[1]}
    if len(parts) == 3:
        device["mode"] = parts[2]
    return device


class DeviceConfig(ConfigModel):
    """A host device exposed to trials (accepted for compatibility)."""

    host_path: PathText
    container_path: PathText
    mode: Annotated[str, Field(max_length=16)] = "mrw"


Device = Annotated[DeviceConfig, BeforeValidator(_device_input)]


class ResourcesConfig(ConfigModel):
    """What a trial needs and how its experiment competes for slots.

    ``priority`` is 1..99, lower runs first; None means the pool's default (42). ``weight`` is
    the fair-share weight. ``max_slots`` caps the slots the experiment holds at once.
    """

    slots_per_trial: Annotated[int, Field(ge=0, le=MAX_SLOTS_PER_TRIAL)] = 1
    max_slots: Annotated[int, Field(ge=0, le=DB_INT_MAX)] | None = None
    weight: Annotated[float, Field(gt=0)] = 1.0
    priority: Annotated[int, Field(ge=1, le=99)] | None = None
    resource_pool: Name = ""
    shm_size: MemorySize | None = None
    agent_label: Name | None = None
    is_single_node: bool | None = None
    devices: list[Device] = []
    native_parallel: bool = False
    # Determined accepts and ignores it.
    slots: int | None = None
