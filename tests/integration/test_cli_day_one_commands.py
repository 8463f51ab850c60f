"""The commands a Determined user reaches for on a first day, through the ``assay`` CLI on one
real cluster: ``experiment fork|continue|delete``, ``master config|logs``, ``--head``/``--tail``/
``--timestamps`` on logs, ``--csv`` on every listing, each command of the list running, and the
model registry (a registered checkpoint survives ``set gc-policy 0 0 0``)."""

from __future__ import annotations

import csv
import io
import json
import re
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from assay.errors import Forbidden, InvalidRequest, NotFound
from assay.storage import storage_from_config
from tests.integration.cluster import Cluster, serve

pytestmark = pytest.mark.integration

COUNTER = textwrap.dedent(
    """
    name: counter
    entrypoint: python3 train.py
    hyperparameters: {step_seconds: 0.01, checkpoint_every: 5}
    searcher: {name: single, metric: loss, max_length: {batches: 20}}
    max_restarts: 0
    """
)
STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z ")


@pytest.fixture(scope="module")
def day(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Cluster]:
    c = Cluster(tmp_path_factory.mktemp("day") / "home")
    c.start_master()
    c.start_agent("agent-1", slots=2)
    yield from serve(c, request)


@pytest.fixture(scope="module")
def done(day: Cluster) -> int:
    """A completed single-trial experiment of the counter (checkpoints at steps 5 to 20)."""
    exp_id = day.submit(COUNTER)
    day.wait_state(exp_id, "COMPLETED")
    return exp_id


def _json(c: Cluster, *args: str) -> object:
    return json.loads(c.cli(*args, check=True).stdout)


def _one_trial(c: Cluster, exp_id: int) -> int:
    (trial,) = c.client.trials(exp_id)
    return trial.id


def test_fork_makes_a_new_experiment_from_the_config_and_context_with_overrides(
    day: Cluster, done: int
) -> None:
    bad = day.cli("e", "fork", str(done), "--config", "searcher.max_length.batches=-3")
    assert bad.returncode == 1 and "searcher.max_length" in bad.stderr, bad.stderr
    assert "Traceback" not in bad.stderr

    forked = _json(day, "e", "fork", str(done), "--config", "name=forked", "--json")
    assert isinstance(forked, dict) and forked["id"] != done and forked["name"] == "forked"
    original = day.client.experiment(done).config
    assert {**forked["config"], "name": "counter"} == original
    final = day.wait_state(forked["id"], "COMPLETED")
    assert final.trials == {"COMPLETED": 1}
    # The same code ran: the stored context of the original, not an upload.
    assert "done at step 20" in day.trial_logs(_one_trial(day, forked["id"]))


def test_continue_trains_the_trial_further_from_its_latest_checkpoint(
    day: Cluster, done: int
) -> None:
    source = day.client.trial(_one_trial(day, done))
    ckpt = day.client.checkpoint(source.latest_checkpoint or "")
    assert ckpt.steps_completed == 20

    result = day.cli(
        "e", "continue", str(done), "--config", "searcher.max_length.batches=30", "-f",
        check=True,
    )  # fmt: skip
    assert "COMPLETED" in result.stdout
    found = re.search(r"created experiment (\d+)", result.stdout)
    assert found, result.stdout
    new_id = int(found[1])
    trial = day.client.trial(_one_trial(day, new_id))
    assert trial.hparams == source.hparams
    lines = day.trial_logs(trial.id)
    assert lines[0].startswith("started at step 20 "), lines
    training = [m.steps_completed for m in day.client.metrics(trial.id, "training")]
    assert training[0] == 21 and training[-1] == 30
    assert "done at step 30" in lines

    at_length = day.cli("e", "continue", str(done))
    assert at_length.returncode == 1 and at_length.stderr.strip().endswith(
        f"trial {source.id} already trained 20 batches, its searcher.max_length; "
        "give a longer one: --config searcher.max_length.batches=N"
    ), at_length.stderr

    several = day.cli("e", "continue", str(done), "--trial", "999999")
    assert several.returncode == 1 and "not a trial of experiment" in several.stderr


def test_delete_asks_first_removes_files_then_rows_and_refuses_a_running_one(
    day: Cluster,
) -> None:
    exp_id = day.submit(COUNTER)
    exp = day.wait_state(exp_id, "COMPLETED")
    storage = storage_from_config(exp.config["checkpoint_storage"])
    kept = [ck.uuid for ck in day.client.experiment_checkpoints(exp_id) if ck.state == "ACTIVE"]
    assert kept and all(storage.exists(uuid) for uuid in kept)

    asked = subprocess_with_input(day, "n\n", "e", "delete", str(exp_id))
    assert asked.returncode == 1
    assert f"Delete experiment {exp_id} (counter, 1 trial, {len(kept)} checkpoint" in asked.stderr
    assert day.client.experiment(exp_id).id == exp_id and all(storage.exists(u) for u in kept)

    gone = day.cli("e", "delete", str(exp_id), "--yes", check=True)
    assert f"deleted experiment {exp_id}" in gone.stdout
    assert not any(storage.exists(uuid) for uuid in kept)
    missing = day.cli("e", "describe", str(exp_id))
    assert missing.returncode == 1 and "not found" in missing.stderr
    assert exp_id not in [e.id for e in day.client.list_experiments(archived=True).experiments]

    paused = day.submit(COUNTER, activate=False)
    refused = day.cli("e", "delete", str(paused), "--yes")
    assert refused.returncode == 1
    assert len(refused.stderr.strip().splitlines()) == 1 and "kill it first" in refused.stderr
    day.cli("e", "kill", str(paused), check=True)
    day.wait_state(paused, "CANCELED")
    day.cli("e", "delete", str(paused), "-y", check=True)

    other = day.add_user("someone")
    theirs = day.submit(COUNTER, activate=False)
    day.cli("e", "kill", str(theirs), check=True)
    with pytest.raises(Forbidden):
        other.delete_experiment(theirs)


def test_set_gc_policy_zero_asks_then_deletes_every_checkpoint_files_first(
    day: Cluster,
) -> None:
    exp_id = day.submit(COUNTER + "checkpoint_storage: {save_trial_latest: 4}\n")
    exp = day.wait_state(exp_id, "COMPLETED")
    storage = storage_from_config(exp.config["checkpoint_storage"])
    kept = [ck.uuid for ck in day.client.experiment_checkpoints(exp_id) if ck.state == "ACTIVE"]
    assert len(kept) == 4 and all(storage.exists(uuid) for uuid in kept)
    zero = ("--save-experiment-best", "0", "--save-trial-best", "0", "--save-trial-latest", "0")

    asked = subprocess_with_input(day, "n\n", "e", "set", "gc-policy", *zero, str(exp_id))
    assert asked.returncode == 1
    assert "Delete 4 checkpoints? [y/N]" in asked.stderr
    assert all(uuid in asked.stdout for uuid in kept)
    assert all(storage.exists(uuid) for uuid in kept)

    done = day.cli("e", "set", "gc-policy", *zero, str(exp_id), "--yes", check=True)
    assert "deleted 4 checkpoints" in done.stdout
    assert not any(storage.exists(uuid) for uuid in kept)
    rows = day.client.experiment_checkpoints(exp_id)
    assert rows and {ck.state for ck in rows} == {"DELETED"}
    assert _json(day, "e", "list-checkpoints", str(exp_id), "--json") == []
    shown = _json(day, "e", "list-checkpoints", str(exp_id), "--json", "--deleted")
    assert isinstance(shown, list) and len(shown) == len(rows)
    stored = day.client.experiment(exp_id).config["checkpoint_storage"]
    assert stored["save_trial_latest"] == 0

    again = day.cli("e", "set", "gc-policy", str(exp_id), check=True)
    assert "no checkpoints to delete" in again.stdout
    with pytest.raises(InvalidRequest, match="save_trial_best"):
        day.client.http.post(f"/api/v1/experiments/{exp_id}/gc", {"save_trial_best": -1})


def test_a_registered_checkpoint_survives_gc_and_blocks_its_experiments_deletion(
    day: Cluster, tmp_path: Path
) -> None:
    exp_id = day.submit(COUNTER + "checkpoint_storage: {save_trial_latest: 4}\n")
    exp = day.wait_state(exp_id, "COMPLETED")
    storage = storage_from_config(exp.config["checkpoint_storage"])
    ckpts = day.client.experiment_checkpoints(exp_id)
    assert len(ckpts) == 4 and {c.state for c in ckpts} == {"ACTIVE"}
    kept = ckpts[0].uuid  # step 5: neither the best nor the latest
    others = [c.uuid for c in ckpts[1:]]

    day.cli("model", "create", "mnist", "--description", "digits", check=True)
    made = day.cli("model", "register-version", "mnist", kept, check=True)
    assert f"registered checkpoint {kept} as mnist v1" in made.stdout

    zero = ("--save-experiment-best", "0", "--save-trial-best", "0", "--save-trial-latest", "0")
    done = day.cli("e", "set", "gc-policy", *zero, str(exp_id), "--yes", check=True)
    assert f"checkpoint {kept} kept: registered as model mnist v1" in done.stdout
    assert "deleted 3 checkpoints" in done.stdout
    assert storage.exists(kept) and not any(storage.exists(u) for u in others)
    states = {c.uuid: c.state for c in day.client.experiment_checkpoints(exp_id)}
    assert states == {kept: "ACTIVE", **dict.fromkeys(others, "DELETED")}

    described = json.loads(day.cli("model", "describe", "mnist", "--json", check=True).stdout)
    assert described["model"]["description"] == "digits"
    assert [(v["version"], v["checkpoint"]["uuid"]) for v in described["versions"]] == [(1, kept)]
    text = day.cli("model", "describe", "mnist", "--version", "1", check=True).stdout
    assert f"checkpoint {kept}: experiment {exp_id}" in text

    listed = json.loads(day.cli("e", "list-checkpoints", str(exp_id), "--json").stdout)
    assert [(c["uuid"], c["model_versions"]) for c in listed] == [
        (kept, [{"model": "mnist", "version": 1}])
    ]
    rows = list(
        csv.DictReader(io.StringIO(day.cli("e", "list-checkpoints", str(exp_id), "--csv").stdout))
    )
    assert [r["Model Versions"] for r in rows] == ["mnist v1"]
    models = list(csv.DictReader(io.StringIO(day.cli("model", "list", "--csv").stdout)))
    assert [(m["Name"], m["Versions"], m["Latest"]) for m in models] == [("mnist", "1", "v1")]

    out = tmp_path / "downloaded"
    day.cli("model", "download", "mnist", "--version", "1", "-o", str(out), check=True)
    files = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    with storage.restore_path(kept) as stored:
        expected = {
            p.relative_to(stored).as_posix(): p.read_bytes()
            for p in stored.rglob("*")
            if p.is_file()
        }
    assert files and files == expected

    described = day.cli("c", "describe", kept, check=True).stdout
    assert "  model versions: mnist v1" in described, described
    refused = day.cli("e", "delete", str(exp_id), "--yes")
    assert refused.returncode == 1 and "mnist v1" in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr and storage.exists(kept)
    # Refused before the question is asked, and before the plan is printed.
    unasked = subprocess_with_input(day, "y\n", "e", "delete", str(exp_id))
    assert unasked.returncode == 1 and "mnist v1" in unasked.stderr
    assert "[y/N]" not in unasked.stderr
    unplanned = day.cli("c", "delete", kept, "--yes")
    assert unplanned.returncode == 1 and "mnist v1" in unplanned.stderr, unplanned.stderr
    assert "checkpoints to delete" not in unplanned.stdout and storage.exists(kept)

    asked = subprocess_with_input(day, "n\n", "model", "delete", "mnist")
    assert asked.returncode == 1 and "Delete model mnist and its 1 version? [y/N]" in asked.stderr
    gone = day.cli("model", "delete", "mnist", "--yes", check=True)
    assert "deleted model mnist and its 1 version; their checkpoints stay" in gone.stdout
    assert day.client.checkpoint(kept).state == "ACTIVE" and storage.exists(kept)
    with pytest.raises(NotFound, match="no model called 'mnist'"):
        day.client.model("mnist")
    day.cli("e", "delete", str(exp_id), "--yes", check=True)
    assert not storage.exists(kept)


def subprocess_with_input(c: Cluster, text: str, *args: str) -> object:
    import subprocess
    import sys

    from tests.integration.cluster import ROOT

    return subprocess.run(
        [sys.executable, "-c", "from assay.cli import main; main()", *args],
        env={**c.env, "COLUMNS": "160"},
        input=text,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        check=False,
    )


def test_master_config_masks_secrets_and_master_logs_tails_its_log(day: Cluster) -> None:
    config = _json(day, "master", "config", "--json")
    assert isinstance(config, dict)
    assert config["port"] == day.port and config["agent_token"] == "********"
    assert "agent-token-for-tests" not in day.cli("master", "config", check=True).stdout

    lines = day.cli("master", "logs", check=True).stdout.splitlines()
    assert any("INFO" in line for line in lines), lines
    tail = day.cli("master", "logs", "--tail", "2", check=True).stdout.splitlines()
    assert tail == lines[-2:] or len(tail) == 2  # the master may log between the two reads

    with pytest.raises(Forbidden):
        day.add_user("reader").master_logs()


def test_logs_head_tail_and_timestamps_keep_each_line_as_written(day: Cluster, done: int) -> None:
    trial_id = _one_trial(day, done)
    full = day.cli("t", "logs", str(trial_id), check=True).stdout.splitlines()
    assert full == day.trial_logs(trial_id)
    assert (
        day.cli("t", "logs", str(trial_id), "--tail", "2", check=True).stdout.splitlines()
        == (full[-2:])
    )
    assert (
        day.cli("t", "logs", str(trial_id), "--head", "1", check=True).stdout.splitlines()
        == (full[:1])
    )
    stamped = day.cli("t", "logs", str(trial_id), "-t", check=True).stdout.splitlines()
    assert [STAMP.sub("", line, count=1) for line in stamped] == full
    assert all(STAMP.match(line) for line in stamped)
    by_task = day.cli("task", "logs", f"trial-{trial_id}", "--tail", "1", "--timestamps")
    assert STAMP.sub("", by_task.stdout.strip()) == full[-1]
    exp_tail = day.cli("e", "logs", str(done), "--tail", "3", check=True).stdout.splitlines()
    assert len(exp_tail) == 3 and exp_tail[-1] == f"[trial {trial_id}] {full[-1]}"
    both = day.cli("t", "logs", str(trial_id), "--head", "1", "--tail", "1")
    assert both.returncode == 1 and len(both.stderr.strip().splitlines()) == 1


LISTINGS: list[tuple[tuple[str, ...], list[str]]] = [
    (("e", "list"), ["ID", "Name", "User", "State"]),
    (("e", "list-trials", "{exp}"), ["Trial", "State", "Steps"]),
    (("e", "list-checkpoints", "{exp}"), ["UUID", "Trial", "Steps", "State"]),
    (("job", "list"), ["#", "Job", "ID", "Type", "Job Name"]),
    (("task", "list", "--all"), ["ID", "Type", "Name", "State"]),
    (("agent", "list"), ["Agent ID", "Pool", "Connected"]),
    (("slot", "list"), ["Agent ID", "Pool", "Slot ID"]),
    (("resource-pool", "list"), ["Name", "Scheduler"]),
    (("user", "list"), ["ID", "Username", "Admin"]),
    (("token", "list"), ["ID", "User", "Description"]),
    (("t", "describe", "{trial}", "--metrics"), ["group", "steps_completed", "time"]),
]


def test_every_listing_prints_csv_that_the_csv_module_reads(day: Cluster, done: int) -> None:
    ids = {"exp": str(done), "trial": str(_one_trial(day, done))}
    # A row for `job list`: it waits for 4 slots the 2-slot cluster does not have.
    queued = day.submit(COUNTER, overrides=("resources.slots_per_trial=4",))
    day.cli("token", "create", "--description", "for, a [csv] test", check=True)
    for args, header in LISTINGS:
        argv = [a.format(**ids) for a in args]
        out = day.cli(*argv, "--csv", check=True).stdout
        rows = list(csv.reader(io.StringIO(out)))
        assert rows[0][: len(header)] == header, (argv, rows[0])
        assert len(rows) > 1, argv
        assert all(len(r) == len(rows[0]) for r in rows), argv
        assert "[" not in rows[0][0] and "\x1b" not in out, argv
    tokens = list(csv.DictReader(io.StringIO(day.cli("token", "list", "--csv").stdout)))
    assert "for, a [csv] test" in [t["Description"] for t in tokens]
    exps = list(csv.DictReader(io.StringIO(day.cli("e", "list", "--csv").stdout)))
    assert {"ID": str(done), "State": "COMPLETED"}.items() <= next(
        e for e in exps if e["ID"] == str(done)
    ).items()
    day.cli("e", "kill", str(queued), check=True)


def test_every_command_of_the_list_runs(day: Cluster, done: int) -> None:
    trial = str(_one_trial(day, done))
    exp = str(done)
    waiting = str(day.submit(COUNTER, activate=False))
    commands: list[tuple[str, ...]] = [
        ("--version",),
        ("-h",),
        ("e", "-h"),
        ("e", "ls"),
        ("e", "set", "name", exp, "counter"),
        ("e", "set", "description", exp, "a counter"),
        ("e", "set", "labels", exp, "a,b"),
        ("e", "set", "max-slots", waiting, "none"),
        ("e", "fork", exp, "--paused"),
        ("e", "continue", exp, "--paused", "--config", "searcher.max_length.batches=25"),
        ("agent", "list"),
        ("slot", "list"),
        ("resource-pool", "list"),
        ("master", "info"),
        ("master", "config"),
        ("master", "logs", "--tail", "5"),
        ("t", "describe", trial, "--metrics"),
        ("t", "describe", trial, "--csv"),
        ("t", "logs", trial, "--timestamps", "--tail", "3"),
        ("e", "list", "--csv"),
    ]
    for args in commands:
        result = day.cli(*args)
        assert result.returncode == 0, (args, result.stderr)
        assert result.stdout.strip() and "Traceback" not in result.stderr, args
    # `e delete` runs too (on the paused ones, once killed).
    for paused in [e.id for e in day.client.list_experiments(states=["PAUSED"]).experiments]:
        day.cli("e", "kill", str(paused), check=True)
        day.wait_state(paused, "CANCELED")
        day.cli("e", "delete", str(paused), "--yes", check=True)
