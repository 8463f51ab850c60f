"""The wire shapes: each survives JSON both ways, and a malformed one is refused naming the
field."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assay.errors import InvalidRequest
from assay.protocol import (
    FRAMEWORKS,
    AckExit,
    CheckpointReport,
    ClusterInfo,
    Container,
    ContextRef,
    Exited,
    Heartbeat,
    Hello,
    Kill,
    LogEntry,
    Logs,
    MetricReport,
    Mount,
    OperationAnswer,
    PreemptionAnswer,
    RankLayout,
    Refusal,
    RegistryAuth,
    SearcherInfo,
    Slot,
    Start,
    Started,
    TrialInfo,
    UnknownMessage,
    Welcome,
    agent_message,
    master_message,
    metric_reports,
)

names = st.text("abcdefgh-0123456789.", min_size=1, max_size=8)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(names, inner, max_size=3),
    max_leaves=8,
)
objects = st.dictionaries(names, json_values, max_size=4)
slots = st.builds(Slot, id=names, type=st.sampled_from(["cpu", "cuda"]), uuid=names, name=names)
exits = st.builds(
    Exited, allocation_id=names, exit_code=st.none() | st.integers(-15, 255), reason=names
)
hellos = st.builds(
    Hello,
    agent_id=names,
    pool=names,
    labels=st.lists(names, max_size=3),
    slots=st.lists(slots, max_size=3),
    running=st.lists(names, max_size=3),
    exited=st.lists(exits, max_size=2),
    version=names,
    address=names,
    token=st.none() | names,
    container_runtime=st.sampled_from(["", "podman", "docker"]),
    frameworks=st.dictionaries(names, st.booleans(), max_size=3),
)
logs = st.builds(
    Logs,
    entries=st.lists(
        st.builds(
            LogEntry,
            allocation_id=names,
            trial_id=st.integers(1, 10**6),
            line=st.text(max_size=20),
            rank=st.integers(0, 8),
            stream=st.sampled_from(["stdout", "stderr"]),
            time=st.floats(0, 2e9),
        ),
        max_size=3,
    ),
)
trial_infos = st.builds(
    TrialInfo,
    trial_id=st.integers(1, 10**6),
    experiment_id=st.integers(1, 10**6),
    trial_seed=st.integers(0, 2**31),
    hparams=objects,
    config=objects.map(lambda d: {k: v for k, v in d.items() if k != "debug"}),
    steps_completed=st.integers(0, 10**6),
    trial_run_id=st.integers(1, 50),
    restarts=st.integers(0, 5),
)
infos = st.builds(
    ClusterInfo,
    master_url=st.just("http://127.0.0.1:8080"),
    cluster_id=names,
    agent_id=names,
    slot_ids=st.lists(names, max_size=3),
    task_id=names,
    allocation_id=names,
    session_token=st.just(""),
    task_type=st.just("TRIAL"),
    latest_checkpoint=st.none() | names,
    container_addrs=st.lists(names, max_size=3),
    container_rank=st.integers(0, 4),
    gpu_uuids=st.lists(names, max_size=2),
    user_data=objects,
    trial=st.none() | trial_infos,
    checkpoint_storage=st.none() | objects,
    searcher=st.builds(
        SearcherInfo,
        metric=st.none() | names,
        smaller_is_better=st.booleans(),
        code_driven=st.booleans(),
        pending_length=st.none() | st.integers(1, 1000),
    ),
)
layouts = st.integers(1, 4).flatmap(
    lambda local: st.builds(
        RankLayout,
        world_size=st.just(local * 2),
        node_rank=st.just(1),
        num_nodes=st.just(2),
        first_rank=st.just(local),
        local_world_size=st.just(local),
        master_addr=names,
        master_port=st.integers(1024, 60000),
        rendezvous_port=st.integers(1024, 60000),
    )
)
starts = st.builds(
    Start,
    allocation_id=names,
    trial_id=st.integers(1, 10**6),
    experiment_id=st.integers(1, 10**6),
    run=st.integers(1, 20),
    context=st.builds(ContextRef, id=st.integers(1, 100), sha256=names),
    entrypoint=names | st.lists(names, min_size=1, max_size=3),
    env=st.dictionaries(names, names, max_size=3),
    slots=st.lists(names, max_size=3),
    cluster_info=infos,
    distributed=st.none() | layouts,
    container=st.none()
    | st.builds(
        Container,
        image=names,
        force_pull=st.booleans(),
        mounts=st.lists(
            st.builds(Mount, names, names, st.booleans(), st.sampled_from(["rprivate", "rshared"])),
            max_size=2,
        ),
        auth=st.none() | st.builds(RegistryAuth, names, names, names),
    ),
)


def over_the_wire(message: Any) -> Any:
    return json.loads(json.dumps(message.to_dict()))


@given(st.one_of(hellos, exits, logs, st.builds(Started, names), st.just(Heartbeat())))
def test_what_an_agent_sends_reads_back_the_same(message: Any) -> None:
    assert agent_message(over_the_wire(message)) == message


@given(
    st.one_of(
        starts,
        st.builds(Welcome, names),
        st.builds(Kill, names),
        st.builds(AckExit, names),
        st.builds(Refusal, names),
    )
)
def test_what_the_master_sends_reads_back_the_same(message: Any) -> None:
    assert master_message(over_the_wire(message)) == message


@given(infos)
def test_cluster_info_reads_back_the_same_except_the_token(info: ClusterInfo) -> None:
    back = ClusterInfo.from_dict(over_the_wire(info), token="secret")
    assert "secret" not in json.dumps(back.to_dict())
    assert back == ClusterInfo(**{**info.__dict__, "session_token": "secret"})


def test_an_empty_cluster_info_takes_the_defaults_every_side_uses() -> None:
    info = ClusterInfo.from_dict({}, master_url="http://m:1")
    assert (info.master_url, info.task_type, info.container_rank, info.trial) == (
        "http://m:1",
        "TRIAL",
        0,
        None,
    )
    trial = TrialInfo.from_dict({"trial_id": 3, "experiment_id": 1, "config": {"debug": True}})
    assert (trial.trial_run_id, trial.restarts, trial.steps_completed, trial.debug) == (
        1,
        0,
        0,
        True,
    )


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ({"type": "started"}, r"^started\.allocation_id: required$"),
        ({"type": "exited", "allocation_id": "1.1", "exit_code": "9"}, r"exit_code: must be an"),
        ({"type": "hello", "pool": "gpu"}, "agent hello without an agent_id"),
        (
            {"type": "hello", "agent_id": "a", "slots": [{"type": "cuda"}]},
            r"^hello\.slots\[0\]\.id: required$",
        ),
        ({"type": "logs", "entries": [{"allocation_id": "1.1"}]}, r"entries\[0\]\.trial_id"),
        (
            {"type": "logs", "entries": [{"allocation_id": "1.1", "trial_id": True}]},
            r"^logs\.entries\[0\]\.trial_id: must be an integer, got a boolean$",
        ),
        (
            {"type": "logs", "entries": [{"allocation_id": "1.1", "trial_id": 1, "time": "now"}]},
            r"^logs\.entries\[0\]\.time: must be a number, got a string$",
        ),
        (
            {"type": "hello", "agent_id": "a", "frameworks": {"torch": "yes"}},
            r"^hello\.frameworks\.torch: must be true or false, got a string$",
        ),
        (["started"], "must be an object, got a list"),
    ],
)
def test_a_malformed_agent_message_is_refused_naming_the_field(raw: Any, problem: str) -> None:
    with pytest.raises(InvalidRequest, match=problem):
        agent_message(raw)


@pytest.mark.parametrize(
    "entry",
    [
        {"allocation_id": "1.1", "trial_id": 3, "rank": 1, "stream": "stderr", "time": 5.5},
        {"allocation_id": "1.1", "trial_id": 3, "line": "x", "time": 7},  # a whole-number time
        {"allocation_id": "1.1", "trial_id": 3, "line": None, "stream": None},  # nulls: defaults
    ],
)
def test_a_log_lines_missing_or_null_fields_take_their_defaults(entry: dict[str, Any]) -> None:
    read = LogEntry.from_dict(entry, "e")
    assert read == LogEntry(
        allocation_id="1.1",
        trial_id=3,
        line=entry.get("line") or "",
        rank=entry.get("rank", 0),
        stream=entry.get("stream") or "stdout",
        time=float(entry.get("time", 0.0)),
    )
    assert type(read.time) is float


def test_a_message_of_an_unknown_type_is_told_apart_from_a_malformed_one() -> None:
    with pytest.raises(UnknownMessage, match="'shrug'"):
        agent_message({"type": "shrug"})
    with pytest.raises(UnknownMessage):
        master_message({"type": "hello", "agent_id": "a"})


def test_a_start_with_a_broken_part_names_it() -> None:
    start = {
        "type": "start",
        "allocation_id": "1.1",
        "trial_id": 1,
        "experiment_id": 1,
        "run": 1,
        "context": {"id": 1},
        "entrypoint": "python3 train.py",
    }
    with pytest.raises(InvalidRequest, match=r"^start message\.context\.sha256: required$"):
        master_message(start)
    with pytest.raises(InvalidRequest, match=r"entrypoint: must be a command"):
        master_message({**start, "context": {"id": 1, "sha256": "x"}, "entrypoint": 5})


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ({"reports": 1}, r"^reports: must be a list"),
        ([{"group": "", "steps_completed": 1, "metrics": {}}], r"^reports\[0\]\.group"),
        ([{"group": "t", "steps_completed": -1, "metrics": {}}], r"steps_completed: must be an"),
        ([{"group": "t", "steps_completed": True, "metrics": {}}], r"steps_completed: must be an"),
        ([{"group": "t", "steps_completed": 1, "metrics": []}], r"^reports\[0\]\.metrics: must"),
        ([{"group": "t", "steps_completed": 1, "metrics": {}, "time": "x"}], r"\.time: must be"),
    ],
)
def test_a_malformed_metric_report_is_refused_naming_the_field(raw: Any, problem: str) -> None:
    with pytest.raises(InvalidRequest, match=problem):
        metric_reports(raw)


@given(
    st.lists(
        st.builds(
            MetricReport,
            group=names,
            steps_completed=st.integers(0, 10**9),
            metrics=objects,
            time=st.floats(0, 2e9),
        ),
        max_size=4,
    )
)
def test_metric_reports_read_back_the_same(reports: list[MetricReport]) -> None:
    assert metric_reports([over_the_wire(r) for r in reports]) == reports


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ({"steps_completed": 1}, r"^uuid: required$"),
        ({"uuid": "u", "steps_completed": -3}, r"^steps_completed: must be an integer >= 0"),
        ({"uuid": "u", "steps_completed": 1, "metadata": [1]}, r"^metadata: must be an object"),
        ({"uuid": "u", "steps_completed": 1, "resources": "a"}, r"^resources: must be an object"),
        ({"uuid": "u", "steps_completed": 1, "resources": {"a": -5}}, r"^resources\.a: must be an"),
        (
            {"uuid": "u", "steps_completed": 1, "resources": {"b": True}},
            r"^resources\.b: must be an",
        ),
        (
            {"uuid": "u", "steps_completed": 1, "resources": {"c": "x"}},
            r"^resources\.c: must be an",
        ),
    ],
)
def test_a_malformed_checkpoint_report_is_refused_naming_the_field(raw: Any, problem: str) -> None:
    with pytest.raises(InvalidRequest, match=problem):
        CheckpointReport.from_dict(raw)


def test_a_distributed_layout_with_a_wrongly_typed_field_names_it() -> None:
    layout = {
        "world_size": 2, "node_rank": 0, "num_nodes": 1, "first_rank": 0, "local_world_size": 2,
        "master_addr": "127.0.0.1", "master_port": 29500, "rendezvous_port": 29501,
    }  # fmt: skip
    assert RankLayout.from_dict(layout).world_size == 2
    for key, bad in (("world_size", True), ("master_port", 2.9), ("node_rank", "0")):
        with pytest.raises(InvalidRequest, match=rf"distributed\.{key}: must be an integer"):
            RankLayout.from_dict({**layout, key: bad})
    with pytest.raises(InvalidRequest, match=r"distributed\.master_addr: required"):
        RankLayout.from_dict({k: v for k, v in layout.items() if k != "master_addr"})


def test_a_checkpoint_report_counts_only_file_sizes() -> None:
    report = CheckpointReport("u", 5, {"steps_completed": 5}, {"a": 3, "d/": 0, "b": 4})
    assert CheckpointReport.from_dict(over_the_wire(report)) == report
    assert report.size == 7


def test_answers_to_the_harness_read_back_the_same() -> None:
    for answer in (
        OperationAnswer(100, False),
        OperationAnswer(None, True),
        OperationAnswer(None, True, released=True),
    ):
        assert OperationAnswer.from_dict(over_the_wire(answer)) == answer
    assert OperationAnswer(100, False).to_dict() == {"length": 100, "done": False}
    with pytest.raises(InvalidRequest, match=r"^operation\.length: required$"):
        OperationAnswer.from_dict({"done": False})
    assert PreemptionAnswer.from_dict(over_the_wire(PreemptionAnswer(True))).preempt is True


def test_an_agent_finds_its_frameworks_on_the_path_without_importing_them() -> None:
    # In a fresh interpreter: importing torch alone takes seconds, and a probe must not.
    probe = (
        "import importlib.util, json, sys\n"
        "from assay.protocol import FRAMEWORKS, importable_frameworks\n"
        "found = importable_frameworks()\n"
        "print(json.dumps([found, sorted(m for m in FRAMEWORKS if m in sys.modules),"
        " {m: importlib.util.find_spec(m) is not None for m in FRAMEWORKS}]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    found, imported, expected = json.loads(done.stdout)
    assert found == expected
    assert set(found) == set(FRAMEWORKS) and imported == []
