"""An Optuna study's trials kept small: in memory while a long search runs, and in its snapshot.

A model-based sampler reads every finished trial at every ask, so a search keeps one Optuna
trial per trial it ever ran. As Optuna builds them, each finished trial has its own copy of the
distributions and its own empty attribute maps, about 1.4 KiB a trial; :class:`TrialSlimmer` makes
finished trials share them (finished trials are never changed again, so sharing is safe).

A snapshot holds the history by column (:func:`encode`): per parameter, the list of every trial's
value in Optuna's internal form (None where a conditional parameter was not drawn); one letter
per trial for its state; the values; the system attributes of the trials that have any. That is
about half the JSON of a list of per-trial maps. :func:`decode` also reads snapshots written as
such a list (``history``) by earlier versions, so a search snapshotted before an upgrade resumes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from optuna.distributions import BaseDistribution
from optuna.trial import FrozenTrial, TrialState

_LETTERS = {
    TrialState.RUNNING: "r",
    TrialState.COMPLETE: "c",
    TrialState.PRUNED: "p",
    TrialState.FAIL: "f",
}
"""The states an asked trial can be in, as the snapshot spells them (earlier versions wrote the
state's name in lower case: ``running``, ``complete``, ``pruned``, ``fail``)."""
_BY_LETTER = {letter: state for state, letter in _LETTERS.items()}


@dataclass(frozen=True)
class HistoryEntry:
    """One asked trial, as a snapshot keeps it."""

    params: dict[str, Any]
    """The parameters drawn, in Optuna's internal form (a categorical's index), by name."""
    state: TrialState
    value: float | None
    """What the trial was told, set for a complete one only."""
    system_attrs: dict[str, Any]
    """What samplers stored on the trial."""


class TrialSlimmer:
    """Makes finished trials share their distributions and their empty attribute maps."""

    def __init__(self) -> None:
        self._distributions: dict[tuple[tuple[str, BaseDistribution], ...], dict[str, Any]] = {}
        self._empty: dict[Any, Any] = {}

    def slim(self, trial: FrozenTrial) -> None:
        """Point ``trial``'s maps at shared ones, in place; ``trial`` must be finished (a
        running trial's maps are still written to)."""
        if not trial.state.is_finished():
            raise ValueError(f"trial {trial.number} is {trial.state.name}, not finished")
        dists = trial.distributions
        key = tuple(dists.items())
        trial.distributions = self._distributions.setdefault(key, dict(dists))
        if not trial.user_attrs:
            trial.user_attrs = self._empty
        if not trial.system_attrs:
            trial.system_attrs = self._empty
        if not trial.intermediate_values:
            trial.intermediate_values = self._empty


def encode(trials: Sequence[FrozenTrial]) -> dict[str, Any]:
    """The history of ``trials`` (every asked trial, in ask order) by column."""
    params: dict[str, list[Any]] = {}
    values: list[float | None] = []
    letters: list[str] = []
    attrs: dict[str, dict[str, Any]] = {}
    for number, trial in enumerate(trials):
        for name, dist in trial.distributions.items():
            column = params.get(name)
            if column is None:
                column = params[name] = [None] * number
            column.append(dist.to_internal_repr(trial.params[name]))
        for column in params.values():
            if len(column) == number:
                column.append(None)
        letters.append(_LETTERS[trial.state])
        values.append(trial.value if trial.state is TrialState.COMPLETE else None)
        if trial.system_attrs:
            attrs[str(number)] = dict(trial.system_attrs)
    return {"params": params, "states": "".join(letters), "values": values, "attrs": attrs}


def decode(state: Mapping[str, Any]) -> Iterator[HistoryEntry]:
    """The entries of a snapshot's history, in ask order: the columns of :func:`encode`
    (``trials``), or a list of maps (``history``, as earlier versions wrote)."""
    if "history" in state:
        for raw in state["history"]:
            yield HistoryEntry(
                params=dict(raw["params"]),
                state=TrialState[raw["state"].upper()],
                value=raw.get("value"),
                system_attrs=dict(raw.get("system_attrs") or {}),
            )
        return
    columns = state["trials"]
    params: dict[str, list[Any]] = columns["params"]
    values: list[float | None] = columns["values"]
    attrs: dict[str, dict[str, Any]] = columns["attrs"]
    for number, letter in enumerate(columns["states"]):
        yield HistoryEntry(
            params={name: col[number] for name, col in params.items() if col[number] is not None},
            state=_BY_LETTER[letter],
            value=values[number],
            system_attrs=dict(attrs.get(str(number), {})),
        )
