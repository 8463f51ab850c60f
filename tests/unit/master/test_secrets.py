"""Secret environment variables on a real master and database: the trial gets the value, every
answer and every stored log line shows ``********``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from assay import rest
from assay.config import MASK
from assay.db import Database, trials
from assay.master import Master, Submission
from assay.master.experiments._secrets import LogMasker
from assay.protocol import LogEntry
from tests.unit.db.statements import statements
from tests.unit.master.conftest import ADMIN
from tests.unit.master.support import Recorder, run

TOKEN = "hunter2-token"
KEY = "k.e*y(+)[$]"

CONFIG = f"""\
# TOKEN is {TOKEN}
entrypoint: python3 train.py
searcher: {{name: single, metric: loss, max_length: {{batches: 10}}}}
environment:
  environment_variables:
    - PLAIN=visible
    - name: TOKEN
      value: {TOKEN}
      secret: true
    - name: KEY
      value: "{KEY}"
      secret: true
"""

PLAIN_CONFIG = "entrypoint: python3 train.py\nsearcher: {name: single, metric: loss}\n"


def start(master: Master, context: bytes, config_text: str, agent_id: str) -> dict[str, object]:
    """Submit a one-trial experiment, run it on a new agent; the agent's start message."""
    run(master.experiments.create(ADMIN, Submission(config_text, context)))
    agent = Recorder()
    hello = {"type": "hello", "agent_id": agent_id, "slots": [{"id": "0", "type": "cpu"}]}
    run(master.pools.join(hello, agent))
    run(master.loops.schedule_once())
    (message,) = agent.starts()
    return message


def ship(master: Master, agent_id: str, start: dict[str, object], *lines: str) -> None:
    entries = [
        {"allocation_id": start["allocation_id"], "trial_id": start["trial_id"], "line": line}
        for line in lines
    ]
    run(master.agents.on_message(agent_id, {"type": "logs", "entries": entries}))


def test_the_trial_gets_the_real_values_of_secret_variables(master: Master, context: bytes) -> None:
    message = start(master, context, CONFIG, "a1")
    env, cluster_info = message["env"], message["cluster_info"]
    assert isinstance(env, dict) and isinstance(cluster_info, dict)
    assert env["TOKEN"] == TOKEN and env["KEY"] == KEY and env["PLAIN"] == "visible"
    stored = cluster_info["trial"]["config"]["environment"]["environment_variables"]["cpu"]
    assert stored[1] == {"name": "TOKEN", "value": TOKEN, "secret": True}


def test_experiment_answers_show_secret_values_masked(master: Master, context: bytes) -> None:
    created = run(master.experiments.create(ADMIN, Submission(CONFIG, context)))
    for exp in (
        created,
        run(master.reads.experiment(created.id)),
        run(master.experiments.pause(ADMIN, created.id)),
    ):
        answer = json.dumps(rest.to_json(exp))
        assert TOKEN not in answer and "hunter2" not in answer and "(+)" not in answer
        variables = exp.config["environment"]["environment_variables"]["cpu"]
        assert variables == [
            "PLAIN=visible",
            {"name": "TOKEN", "value": MASK, "secret": True},
            {"name": "KEY", "value": MASK, "secret": True},
        ]
        assert exp.original_config.startswith(f"# TOKEN is {MASK}\n")
        written = yaml.safe_load(exp.original_config)["environment"]["environment_variables"]
        assert [v if isinstance(v, str) else v["value"] for v in written] == [
            "PLAIN=visible",
            MASK,
            MASK,
        ]


def test_a_secret_value_in_the_experiments_name_or_description_is_masked_in_every_answer(
    master: Master, context: bytes
) -> None:
    # People paste values into names and descriptions; the config text masks them, and so must
    # the fields read from it.
    config = CONFIG.replace(
        "entrypoint:", f"name: run-{TOKEN}\ndescription: uses {KEY} and {TOKEN}\nentrypoint:"
    )
    created = run(master.experiments.create(ADMIN, Submission(config, context)))
    listed = run(master.reads.experiments()).experiments
    queue = run(master.reads.queue(None))
    for answer in (
        created,
        run(master.reads.experiment(created.id)),
        run(master.experiments.pause(ADMIN, created.id)),
        *listed,
    ):
        assert answer.name == f"run-{MASK}"
        assert answer.description == f"uses {MASK} and {MASK}"
        assert "hunter2" not in json.dumps(rest.to_json(answer))
    assert [job.name for job in queue.jobs] == [f"run-{MASK}"]
    assert "hunter2" not in queue.model_dump_json() and "(+)" not in queue.model_dump_json()


def test_secret_values_are_masked_in_log_lines_before_they_are_stored(
    master: Master, context: bytes
) -> None:
    secret = start(master, context, CONFIG, "a1")
    plain = start(master, context, PLAIN_CONFIG, "a2")
    ship(
        master,
        "a1",
        secret,
        f"token={TOKEN}!",
        f"{KEY} and {TOKEN}{TOKEN}",
        "PLAIN=visible",
    )
    ship(master, "a2", plain, f"not a secret here: {TOKEN}")
    secret_trial, plain_trial = secret["trial_id"], plain["trial_id"]
    assert isinstance(secret_trial, int) and isinstance(plain_trial, int)
    lines = [e.line for e in run(master.reads.logs(secret_trial)).logs]
    assert lines == [f"token={MASK}!", f"{MASK} and {MASK}{MASK}", "PLAIN=visible"]
    # Another experiment's lines are its own business.
    assert [e.line for e in run(master.reads.logs(plain_trial)).logs] == [
        f"not a secret here: {TOKEN}"
    ]


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_log_masker_reads_each_trials_secrets_once(
    master: Master, context: bytes, tmp_path: Path
) -> None:
    secret = start(master, context, CONFIG, "a1")["trial_id"]
    plain = start(master, context, PLAIN_CONFIG, "a2")["trial_id"]
    assert isinstance(secret, int) and isinstance(plain, int)
    masker = LogMasker(size=1)
    line = LogEntry(allocation_id="x", trial_id=secret, line=f"a {TOKEN} b", stream="stderr")
    (masked,) = master.db.run_sync(lambda s: masker.masked(s, [line]))
    assert masked == LogEntry(
        allocation_id="x", trial_id=secret, line=f"a {MASK} b", stream="stderr"
    )
    # Remembered: not read again, even from a database that does not have the trial...
    empty = Database(f"sqlite:///{tmp_path / 'empty.db'}")
    empty.migrate()
    assert empty.run_sync(lambda s: masker.masked(s, [line]))[0].line == f"a {MASK} b"
    # ...until the trials seen since push it out (size=1).
    other = LogEntry(allocation_id="y", trial_id=plain, line=TOKEN)
    assert master.db.run_sync(lambda s: masker.masked(s, [other])) == [other]
    assert empty.run_sync(lambda s: masker.masked(s, [line])) == [line]
    empty.dispose()


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_log_masker_reads_an_experiments_config_once_for_all_its_trials(
    master: Master, context: bytes
) -> None:
    searcher = "searcher: {name: random, metric: loss, max_trials: 3, max_length: {batches: 10}}"
    text = CONFIG.replace(
        "searcher: {name: single, metric: loss, max_length: {batches: 10}}", searcher
    )
    exp = run(master.experiments.create(ADMIN, Submission(text, context)))
    ids = master.db.run_sync(lambda s: [t.id for t in trials.of_experiment(s, exp.id)])
    assert len(ids) == 3
    masker = LogMasker()

    def line(trial_id: int) -> LogEntry:
        return LogEntry(allocation_id="x", trial_id=trial_id, line=f"a {TOKEN}")

    with statements(master.db, "SELECT") as seen:
        masked = master.db.run_sync(lambda s: masker.masked(s, [line(ids[0]), line(ids[1])]))
    assert [e.line for e in masked] == [f"a {MASK}"] * 2
    assert len(seen) == 2, "which experiment each trial is of, then that experiment, at once"
    with statements(master.db, "SELECT") as seen:
        (third,) = master.db.run_sync(lambda s: masker.masked(s, [line(ids[2])]))
    assert third.line == f"a {MASK}"
    assert len(seen) == 1 and "config" not in seen[0], "the experiment's pattern is kept"


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_log_masker_masks_every_trial_of_a_batch_when_keeping_its_experiments_pushes_one_out(
    master: Master, context: bytes
) -> None:
    text = CONFIG.replace("name: single,", "name: random, max_trials: 2,")
    first = run(master.experiments.create(ADMIN, Submission(text, context))).id
    second = run(master.experiments.create(ADMIN, Submission(text, context))).id

    def trial_ids(exp_id: int) -> list[int]:
        return master.db.run_sync(lambda s: [t.id for t in trials.of_experiment(s, exp_id)])

    (a1, a2), (b1, _) = trial_ids(first), trial_ids(second)
    masker = LogMasker(experiments_kept=1)

    def line(trial_id: int) -> LogEntry:
        return LogEntry(allocation_id="x", trial_id=trial_id, line=f"a {TOKEN}")

    master.db.run_sync(lambda s: masker.masked(s, [line(a1)]))  # the first experiment is kept
    # A new trial of the kept experiment with one of another: keeping the second pushes the
    # first out, and both are masked all the same.
    masked = master.db.run_sync(lambda s: masker.masked(s, [line(a2), line(b1)]))
    assert [e.line for e in masked] == [f"a {MASK}"] * 2
