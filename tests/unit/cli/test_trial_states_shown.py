"""How commands show a trial's state: a trial its searcher holds is WAITING with where it waits
(``WAITING (rung 2 of 4)``), apart from a user's PAUSED; an NNI experiment's trials have NNI's
status names (an assessor's stop is EARLY_STOPPED, not COMPLETED), in ``e create -f``'s lines,
``e describe``'s table and ``trial describe``."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from assay import rest
from assay.cli._experiment_views import trial_table
from assay.cli._follow import ProgressLines
from assay.cli._trial import heading
from assay.cli._trial_state import shown_state, state_counts
from assay.cli.nni import ranked
from tests.unit.cli.test_follow_lines import experiment


def trial(state: str, **fields: Any) -> rest.Trial:
    raw: dict[str, Any] = dict(
        id=7, experiment_id=19, request_id="r", state=state, hparams={}, seed=1, restarts=0,
        runs=1, steps_completed=4, latest_checkpoint=None, best_validation=None, progress=0.0,
        early_stopped=False, early_exit=None, message="", created_at=0.0, started_at=None,
        ended_at=None,
    )  # fmt: skip
    return rest.Trial.model_validate({**raw, **fields})


def rendered(markup: object) -> str:
    console = Console(width=300, color_system=None)
    with console.capture() as out:
        console.print(markup)
    return out.get().strip()


def test_a_waiting_trial_shows_where_it_waits_and_a_paused_one_shows_paused() -> None:
    waiting = trial("WAITING", waiting_at="rung 2 of 4")
    assert shown_state(waiting) == "WAITING (rung 2 of 4)"
    assert shown_state(trial("WAITING")) == "WAITING"
    assert shown_state(trial("PAUSED")) == "PAUSED"
    assert rendered(heading(waiting)).startswith("trial 7 of experiment 19  WAITING (rung 2 of 4)")
    assert "PAUSED" in rendered(heading(trial("PAUSED")))


def test_an_nni_experiment_s_trials_have_nni_s_status_names() -> None:
    stopped = trial("COMPLETED", early_stopped=True)
    assert shown_state(stopped) == "COMPLETED (early stop)"
    assert shown_state(stopped, nni=True) == "EARLY_STOPPED"
    assert shown_state(trial("COMPLETED"), nni=True) == "SUCCEEDED"
    assert shown_state(trial("ERROR"), nni=True) == "FAILED"
    assert state_counts([stopped, trial("COMPLETED"), trial("RUNNING")], nni=True) == [
        ("EARLY_STOPPED", 1),
        ("RUNNING", 1),
        ("SUCCEEDED", 1),
    ]


def test_piped_follow_of_an_nni_experiment_says_early_stopped() -> None:
    lines = ProgressLines(19)
    nni = experiment(source="nni-v2")
    assert lines.update(nni, [trial("RUNNING")]) == [
        "trial 7 RUNNING",
        "experiment 19 ACTIVE 0%: trials 1 running",
    ]
    ended = lines.update(nni, [trial("COMPLETED", early_stopped=True)])
    assert ended == [
        "trial 7 EARLY_STOPPED after 4 steps",
        "experiment 19 ACTIVE 0%: trials 1 early_stopped",
    ]


def test_piped_follow_tells_a_trial_waiting_at_a_rung_from_a_paused_one() -> None:
    lines = ProgressLines(19)
    waiting = trial("WAITING", waiting_at="rung 1 of 2")
    assert lines.update(experiment(), [waiting]) == [
        "trial 7 WAITING (rung 1 of 2)",
        "experiment 19 ACTIVE 0%: trials 1 waiting",
    ]
    assert lines.update(experiment(state="PAUSED"), [trial("PAUSED")]) == [
        "trial 7 PAUSED",
        "experiment 19 PAUSED 0%: trials 1 paused",
    ]


def test_the_trials_table_shows_waiting_with_its_rung_and_nni_names() -> None:
    table = trial_table(
        [trial("WAITING", waiting_at="rung 2 of 4"), trial("COMPLETED", id=8, early_stopped=True)],
        "loss",
    )
    text = rendered(table)
    assert "WAITING (rung 2 of 4)" in text and "COMPLETED (early stop)" in text
    nni = rendered(trial_table([trial("COMPLETED", early_stopped=True)], "default", nni=True))
    assert "EARLY_STOPPED" in nni and "COMPLETED" not in nni


def test_nnictl_head_and_tail_rank_trials_by_final_result() -> None:
    rows = [
        {"trialJobId": 1, "value": 0.5},
        {"trialJobId": 2, "value": None},
        {"trialJobId": 3, "value": 0.9},
        {"trialJobId": 4, "value": 0.1},
    ]
    assert [r["trialJobId"] for r in ranked(rows, largest_first=True)] == [3, 1, 4]
    assert [r["trialJobId"] for r in ranked(rows, largest_first=False)] == [4, 1, 3]
