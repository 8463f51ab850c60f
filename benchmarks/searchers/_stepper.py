"""A discrete-event clock for early stoppers that watch every step of a trial (Optuna's pruners,
Ray Tune's schedulers), with the same compute accounting as ``b9_search_quality.drive``.

Standard library only: it also runs inside Ray Tune's own virtual environment.

``workers`` trials train side by side, one length unit per tick each. After every unit a trial
reports its value to the policy, which says whether it goes on; a trial that reaches
``max_length`` ends there and its value is a finished result. A freed worker starts a new trial
at the next tick. A finished result is charged with all the compute spent by its tick (the
partial work of the trials still training included). The run stops at the first tick where the
compute reaches ``cap``, or when the policy has no more trials to start.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

Curve = list[tuple[int, float]]  # (compute so far, full-length value of a finished trial)

TOTAL = -1.0  # a Curve's last entry (compute, TOTAL) records the run's whole compute


class Policy(Protocol):
    def start(self) -> tuple[Any, dict[str, Any]] | None:
        """A new trial (a handle for the policy, its hyperparameters), or None: no more."""

    def report(self, handle: Any, step: int, value: float, last: bool) -> bool:
        """The trial's value after ``step`` units; True: it trains on. ``last``: it has reached
        the full length and ends whatever the answer."""


def replay(
    value: Callable[[dict[str, Any], int], float],
    max_length: int,
    policy: Policy,
    *,
    workers: int,
    cap: int,
) -> Curve:
    slots: list[list[Any] | None] = [None] * workers
    compute = 0
    found: Curve = []
    exhausted = False
    while compute < cap:
        for i, slot in enumerate(slots):
            if slot is None and not exhausted:
                started = policy.start()
                if started is None:
                    exhausted = True
                else:
                    slots[i] = [started[0], started[1], 0]
        busy = [i for i, slot in enumerate(slots) if slot is not None]
        if not busy:
            break
        compute += len(busy)
        for i in busy:
            slot = slots[i]
            assert slot is not None
            slot[2] += 1
            handle, hparams, step = slot
            result = value(hparams, step)
            last = step >= max_length
            goes_on = policy.report(handle, step, result, last)
            if last:
                found.append((compute, result))
            if last or not goes_on:
                slots[i] = None
    return [*found, (compute, TOTAL)]


def sample(space: dict[str, Any], rng: Any) -> dict[str, Any]:
    """Uniform random hyperparameters from assay's space JSON (doubles and categoricals)."""
    hp: dict[str, Any] = {}
    for name, spec in space.items():
        if spec["type"] == "double":
            hp[name] = rng.uniform(spec["minval"], spec["maxval"])
        else:
            hp[name] = rng.choice(spec["vals"])
    return hp
