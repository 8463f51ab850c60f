"""``max_duration`` and ``max_trial_duration``: checked by the master once a second.

An experiment whose active time (see :mod:`assay.master.kernel._clock`) reaches ``max_duration``
stops as a finished search does: no new trials, its running trials asked to stop (they end
COMPLETED), and it ends COMPLETED, with a note and its message saying why. A trial that has
run longer than ``max_trial_duration`` (its runs' running time added up, so a pause does not
reset it) is killed and ends CANCELED with the message (and exit reason) ``ran longer than
max_trial_duration``.
Each decision is written before any agent is told.
"""

from __future__ import annotations

from assay.config import format_duration
from assay.db import Allocation, Experiment, Trial, allocations, experiments
from assay.master.experiments._lifecycle import (
    kill_allocation,
    maybe_finish_experiment,
    move_experiment,
    move_trials,
)
from assay.master.experiments._transitions import TIMED_OUT, ExperimentEvent
from assay.master.kernel import Reschedule, Tx, active_time, add_note
from assay.protocol import ExperimentState


def _positive(value: float | None) -> float | None:
    return float(value) if value is not None and value > 0 else None


def enforce_time_limits(tx: Tx) -> None:
    """Stop experiments out of time and end trials that ran too long. A paused experiment is
    left alone: its clock is stopped, and what of it still runs is being stopped already (within
    its preemption timeout); its typed config is not loaded for a check that has nothing to do."""
    limited: dict[int, tuple[Experiment, float]] = {}
    # By id and state, each config from the searchers' cache: a large cluster's thousand live
    # experiments are not read whole every second, under the lock (B13).
    for exp_id, state in experiments.live_states(tx.session):
        if state == ExperimentState.PAUSED:
            continue
        exp: Experiment | None = None
        cfg = tx.searchers.loaded_config(exp_id)
        if cfg is None:
            exp = experiments.require(tx.session, exp_id)
            cfg = tx.searchers.config(exp)
        trial_limit = _positive(cfg.max_trial_duration)
        limit = _positive(cfg.max_duration)
        if trial_limit is None and (limit is None or state != ExperimentState.ACTIVE):
            continue
        exp = exp or experiments.require(tx.session, exp_id)
        if trial_limit is not None:
            limited[exp.id] = (exp, trial_limit)
        if limit is None or state != ExperimentState.ACTIVE:
            continue
        if exp.active_since is None:
            # Active since before the master kept the clock: start counting now.
            experiments.start_clock(tx.session, exp, at=tx.now)
        elif active_time(exp, tx.now) >= limit:
            _stop_out_of_time(tx, exp, limit)
    if not limited:
        return
    for alloc, trial in allocations.live_of_experiments(tx.session, list(limited)):
        exp, trial_limit = limited[trial.experiment_id]
        if _trial_run_time(tx, trial) >= trial_limit:
            _end_timed_out(tx, exp, trial, alloc, trial_limit)


def _trial_run_time(tx: Tx, trial: Trial) -> float:
    """Seconds the trial's runs have been running, all of them together."""
    total = 0.0
    for run in allocations.of_trial(tx.session, trial.id):
        if run.started_at is not None:
            total += max(0.0, (run.ended_at or tx.now) - run.started_at)
    return total


def _stop_out_of_time(tx: Tx, exp: Experiment, limit: float) -> None:
    if not move_experiment(tx, exp, ExperimentEvent.SEARCHER_DONE):
        return
    text = f"max_duration ({format_duration(limit)}) reached: stopping the experiment"
    experiments.update(tx.session, exp, message=text)
    add_note(tx, exp.id, text)
    move_trials(tx, exp, ExperimentEvent.SEARCHER_DONE)
    maybe_finish_experiment(tx, exp)
    tx.act(Reschedule())


def _end_timed_out(tx: Tx, exp: Experiment, trial: Trial, alloc: Allocation, limit: float) -> None:
    allocations.mark_timed_out(tx.session, alloc)
    add_note(tx, exp.id, f"trial {trial.id} {TIMED_OUT} ({format_duration(limit)}): ending it")
    kill_allocation(tx, alloc)
