"""When a notebook counts as idle, for each of Determined's ``notebook_idle_type``s."""

from __future__ import annotations

from assay.notebooks import IdleClock, Usage, is_idle
from assay.protocol import IdleType

KERNEL = {"id": "k", "connections": 1, "execution_state": "idle"}
UNCONNECTED = {**KERNEL, "connections": 0}
TERMINAL = {"name": "1"}


def test_the_configs_idle_types_are_the_launchers() -> None:
    from typing import get_args

    from assay.config.determined._notebook import IdleTypeName

    assert set(get_args(IdleTypeName)) == {t.value for t in IdleType}


def test_kernels_or_terminals_is_idle_only_with_neither_running() -> None:
    kind = IdleType.KERNELS_OR_TERMINALS
    assert is_idle(kind, Usage())
    assert not is_idle(kind, Usage(kernels=[UNCONNECTED]))
    assert not is_idle(kind, Usage(terminals=[TERMINAL]))


def test_kernel_connections_is_idle_with_kernels_nobody_is_connected_to() -> None:
    kind = IdleType.KERNEL_CONNECTIONS
    assert is_idle(kind, Usage(kernels=[UNCONNECTED, UNCONNECTED]))
    assert not is_idle(kind, Usage(kernels=[UNCONNECTED, KERNEL]))
    # A terminal cannot say whether someone uses it: it counts as use.
    assert not is_idle(kind, Usage(kernels=[UNCONNECTED], terminals=[TERMINAL]))


def test_the_clock_counts_idleness_from_the_last_look_that_saw_use() -> None:
    clock = IdleClock(IdleType.KERNELS_OR_TERMINALS, last_used=100.0)
    assert clock.look(Usage(), now=110.0) == 10.0  # idle since it started
    assert clock.look(Usage(kernels=[KERNEL]), now=120.0) == 0.0
    assert clock.look(Usage(), now=125.0) == 5.0
    assert clock.look(Usage(), now=190.0) == 70.0


def test_activity_counts_from_the_latest_request_kernel_or_terminal_activity() -> None:
    clock = IdleClock(IdleType.ACTIVITY, last_used=100.0)
    usage = Usage(
        kernels=[{**KERNEL, "last_activity": "1970-01-01T00:02:30Z"}],  # 150
        terminals=[{**TERMINAL, "last_activity": "1970-01-01T00:02:00+00:00"}],  # 120
        last_activity=140.0,
    )
    assert clock.look(usage, now=200.0) == 50.0
    # A kernel busy now is in use, however old its last message.
    busy = Usage(kernels=[{**KERNEL, "execution_state": "busy"}])
    assert clock.look(busy, now=300.0) == 0.0
    assert clock.look(Usage(), now=310.0) == 10.0
    # A running kernel that does nothing is no activity.
    assert clock.look(Usage(kernels=[KERNEL]), now=400.0) == 100.0
