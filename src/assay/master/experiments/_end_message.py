"""The message an experiment the searcher ended in ERROR keeps: when every trial failed, which
trial failed last and the command that shows its log, so a user reading ``describe`` or the end
of ``--follow`` knows where to look."""

from __future__ import annotations

from assay.db import Session, trials
from assay.protocol import TrialState

SEARCHER_FAILED = "the searcher could not go on"
"""The message of a failure the searcher gave no words for."""


def failure_message(session: Session, experiment_id: int, said: str) -> str:
    """What the experiment says after its searcher ended it in failure with ``said``: when
    every trial failed, whatever the searcher's words, the last to fail is named with its own
    message and its log command, each once; any other failure keeps the searcher's words."""
    said = said or SEARCHER_FAILED
    every = trials.of_experiment(session, experiment_id)
    if not every or any(t.state != TrialState.ERROR for t in every):
        return said
    last = max(every, key=lambda t: (t.ended_at or 0.0, t.id))
    # A trial's message that merely repeats the experiment's would say it twice.
    why = f": {last.message}" if last.message and last.message != said else ""
    return f"{said}; the last to fail was trial {last.id}{why}; its log: assay trial logs {last.id}"
