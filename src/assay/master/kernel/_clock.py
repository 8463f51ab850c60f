"""An experiment's active time, the clock ``max_duration`` counts: it runs while the
experiment is ACTIVE and stops while it is paused or stopping. Kept on the experiment's row
(``active_seconds`` before ``active_since``), so it survives a master restart."""

from __future__ import annotations

from assay.db import Experiment, Session, experiments
from assay.protocol import ExperimentState


def active_time(exp: Experiment, now: float) -> float:
    """Seconds the experiment has been ACTIVE, up to ``now``."""
    running = now - exp.active_since if exp.active_since is not None else 0.0
    return (exp.active_seconds or 0.0) + max(0.0, running)


def account_state_change(
    session: Session, exp: Experiment, new_state: ExperimentState, now: float
) -> None:
    """Start or stop the clock as the experiment moves to ``new_state`` (call it before the
    state is written, with the row still holding the old one)."""
    if new_state == ExperimentState.ACTIVE:
        if exp.active_since is None:
            experiments.start_clock(session, exp, at=now)
        return
    if exp.active_since is not None:
        experiments.stop_clock(session, exp, active_seconds=active_time(exp, now))
