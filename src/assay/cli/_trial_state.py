"""A trial's state as every command shows it: the state, with where a WAITING trial's searcher
holds it (``WAITING (rung 2 of 4)``) or that its searcher stopped it early; for an NNI
experiment's trials, NNI's status names (``EARLY_STOPPED``), as ``assay nni`` shows them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

from assay.cli._common import STATE_STYLE, esc
from assay.protocol import NNITrialStatus, TrialState

if TYPE_CHECKING:
    from assay import rest


def shown_state(t: rest.Trial, *, nni: bool = False) -> str:
    """The trial's state as plain text (what a piped line or a CSV cell holds)."""
    state = TrialState(t.state)
    if nni:
        text = NNITrialStatus.of(state, early_stopped=t.early_stopped).value
    else:
        text = state.value
        if state == TrialState.COMPLETED and t.early_stopped:
            text += " (early stop)"
    if state == TrialState.WAITING and t.waiting_at:
        text += f" ({t.waiting_at})"
    return text


def styled_trial_state(t: rest.Trial, *, nni: bool = False) -> str:
    """:func:`shown_state` in the colour of the trial's state, as rich markup."""
    text = esc(shown_state(t, nni=nni))
    style = STATE_STYLE.get(t.state, "yellow" if t.state.startswith("STOPPING_") else "")
    return f"[{style}]{text}[/]" if style else text


def state_counts(trials: Sequence[rest.Trial], *, nni: bool = False) -> list[tuple[str, int]]:
    """How many trials are in each state, by the names :func:`shown_state` gives (without
    where a waiting trial waits), sorted by name."""
    names = Counter(
        NNITrialStatus.of(TrialState(t.state), early_stopped=t.early_stopped).value
        if nni
        else TrialState(t.state).value
        for t in trials
    )
    return sorted(names.items())
