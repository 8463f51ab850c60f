"""Where an experiment's trials start from: ``searcher.source_checkpoint_uuid`` and
``source_trial_id``, checked and resolved at submission, as Determined does.

``source_trial_id`` alone means that trial's latest checkpoint (Determined: "the weights of this
trial will be used as the initial weights"); it is resolved once, when the experiment is
created, into ``source_checkpoint_uuid``, which its searcher gives every trial it creates. Both
together must agree. A checkpoint that does not exist, or whose files are gone, is refused then,
not found missing by every trial at its start.
"""

from __future__ import annotations

from assay.config import ExperimentConfig
from assay.db import Session, checkpoints, trials
from assay.errors import ErrorDetail, InvalidConfig
from assay.protocol import CheckpointState

_UUID = "searcher.source_checkpoint_uuid"
_TRIAL = "searcher.source_trial_id"


def resolve_warm_start(session: Session, config: ExperimentConfig) -> ExperimentConfig:
    """``config`` with the checkpoint its trials start from resolved, or
    :class:`InvalidConfig` naming the key at fault."""
    searcher = config.searcher
    uuid, trial_id = searcher.source_checkpoint_uuid, searcher.source_trial_id
    if uuid is None and trial_id is None:
        return config
    problems: list[ErrorDetail] = []
    trial = trials.get(session, trial_id) if trial_id is not None else None
    if trial_id is not None and trial is None:
        problems.append(ErrorDetail(_TRIAL, f"there is no trial {trial_id}"))
    if uuid is not None:
        problems += _checkpoint_problems(session, uuid, trial_id)
    elif trial is not None:
        if trial.latest_checkpoint is None:
            problems.append(
                ErrorDetail(
                    _TRIAL,
                    f"trial {trial.id} has no checkpoint to start from; name one with "
                    "source_checkpoint_uuid, or start from a trial that saved one",
                )
            )
        else:
            problems += _checkpoint_problems(session, trial.latest_checkpoint, trial_id)
            uuid = trial.latest_checkpoint
    if problems:
        noun = "problem" if len(problems) == 1 else "problems"
        raise InvalidConfig(f"invalid experiment config: {len(problems)} {noun}", problems)
    resolved = searcher.model_copy(update={"source_checkpoint_uuid": uuid})
    return config.model_copy(update={"searcher": resolved})


def _checkpoint_problems(session: Session, uuid: str, trial_id: int | None) -> list[ErrorDetail]:
    row = checkpoints.get(session, uuid)
    if row is None:
        return [
            ErrorDetail(
                _UUID,
                f"there is no checkpoint {uuid}; `assay experiment list-checkpoints ID` lists an "
                "experiment's",
            )
        ]
    state = CheckpointState(row.state)
    if state in (CheckpointState.DELETED, CheckpointState.DELETING):
        return [ErrorDetail(_UUID, f"checkpoint {uuid} is {state}: its files are gone or going")]
    if trial_id is not None and row.trial_id != trial_id:
        return [
            ErrorDetail(
                _UUID,
                f"checkpoint {uuid} belongs to trial {row.trial_id}, not to source_trial_id "
                f"{trial_id}; give one of them, or two that agree",
            )
        ]
    return []
