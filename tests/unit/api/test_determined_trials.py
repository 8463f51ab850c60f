"""Trials under ``/det``: the pure conversions from assay's trial, reports, checkpoints and log
lines to Determined's shapes, and the trial routes' refusals (in Determined's error shape,
before any stream starts). The real ``det`` and SDK drive the same routes on a running trial
in ``tests/integration/test_det_trials.py``."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from assay import rest
from assay.api import create_app
from assay.config import MasterConfig
from assay.db import Database, sqlite_url
from assay.errors import InvalidRequest
from assay.master import Master
from assay.rest import determined as det

BASE = "http://127.0.0.1:8080"
ADMIN_PASSWORD = "Admin-pass-1"


def _metric(group: str, step: int, archived: bool = False, **values: Any) -> rest.Metric:
    return rest.Metric(
        trial_id=7,
        run=1,
        group=group,
        steps_completed=step,
        metrics=values,
        time=1_700_000_000 + step,
        archived=archived,
    )


def _trial(**changes: Any) -> rest.Trial:
    fields: dict[str, Any] = {
        "id": 7,
        "experiment_id": 3,
        "request_id": "r",
        "state": "RUNNING",
        "hparams": {"lr": 0.1, "layers": {"n": 2}},
        "seed": 1,
        "restarts": 1,
        "runs": 2,
        "steps_completed": 30,
        "latest_checkpoint": None,
        "best_validation": 0.25,
        "progress": 0.5,
        "early_stopped": False,
        "early_exit": None,
        "message": "",
        "created_at": 1_700_000_000.0,
        "started_at": 1_700_000_001.0,
        "ended_at": None,
        "latest_training": _metric("training", 30, loss=0.5),
        "latest_validation": _metric("validation", 20, loss=0.25),
    }
    return rest.Trial(**(fields | changes))


def _checkpoint(uuid: str, step: int, state: str = "ACTIVE") -> rest.Checkpoint:
    return rest.Checkpoint(
        uuid=uuid,
        trial_id=7,
        experiment_id=3,
        allocation_id="a1",
        steps_completed=step,
        metadata={"steps_completed": step},
        resources={"state.json": 12, "w.bin": 30},
        size=42,
        state=state,
        reported_at=1_700_000_000 + step + 0.5,
    )


def test_a_trial_reads_as_determined_names_its_fields_states_and_times() -> None:
    shown = det.det_trial(_trial()).model_dump(mode="json")
    assert shown["id"] == 7 and shown["experimentId"] == 3
    assert shown["state"] == "STATE_RUNNING" and shown["restarts"] == 1
    assert shown["startTime"] == "2023-11-14T22:13:20Z" and shown["endTime"] is None
    assert shown["totalBatchesProcessed"] == 30 and shown["searcherMetricValue"] == 0.25
    assert shown["hparams"] == {"lr": 0.1, "layers": {"n": 2}}
    assert shown["latestValidation"]["metrics"]["avgMetrics"] == {"loss": 0.25}
    # Without the reports, the summary holds the latest values only.
    assert shown["summaryMetrics"] == {
        "avg_metrics": {"loss": {"type": "number", "last": 0.5}},
        "validation_metrics": {"loss": {"type": "number", "last": 0.25}},
    }
    assert det.det_trial(_trial(state="WAITING")).state == det.DetTrialState.ACTIVE
    assert det.det_trial(_trial(state="STOPPING_KILLED")).state == "STATE_STOPPING_KILLED"


def test_summary_metrics_fold_every_report_but_archived_ones() -> None:
    reports = [
        _metric("training", 2, loss=0.5, note="b"),
        _metric("training", 1, loss=1.0, note="a"),
        _metric("training", 3, archived=True, loss=9.0),
        _metric("validation", 2, acc=0.75),
        _metric("custom", 1, x="nan"),
    ]
    shown = det.det_trial(_trial(), reports=reports).summary_metrics
    loss = {"type": "number", "count": 2, "sum": 1.5, "min": 0.5, "max": 1.0, "last": 0.5}
    acc = {"type": "number", "count": 1, "sum": 0.75, "min": 0.75, "max": 0.75, "last": 0.75}
    assert shown == {
        "avg_metrics": {"loss": loss, "note": {"type": "string", "last": "b"}},
        "validation_metrics": {"acc": acc},
        "custom": {"x": {"type": "string", "last": "nan"}},
    }


def test_workloads_are_by_step_training_then_validation_then_checkpoint() -> None:
    reports = [
        _metric("validation", 10, loss=0.3),
        _metric("training", 10, loss=0.4),
        _metric("training", 5, loss=0.6),
        _metric("training", 12, archived=True, loss=7.0),
        _metric("custom", 10, x=1),
    ]
    checkpoints = [_checkpoint("c10", 10), _checkpoint("c5", 5, "DELETED")]
    shown = det.workloads(reports, checkpoints)
    order = [
        (w.training or w.validation or w.checkpoint).total_batches  # type: ignore[union-attr]
        for w in shown
    ]
    kinds = ["t" if w.training else "v" if w.validation else "c" for w in shown]
    assert list(zip(order, kinds, strict=True)) == [
        (5, "t"),
        (5, "c"),
        (10, "t"),
        (10, "v"),
        (10, "c"),
    ]
    deleted, kept = shown[1].checkpoint, shown[4].checkpoint
    assert deleted is not None and deleted.state == det.CheckpointState.DELETED
    assert kept is not None and kept.state == det.CheckpointState.COMPLETED
    assert kept.resources == {"state.json": "12", "w.bin": "30"}
    counted = det.det_trial(_trial(), checkpoints=checkpoints)
    assert counted.checkpoint_count == 1 and counted.total_checkpoint_size == "42"


def test_a_report_reads_under_the_key_the_sdk_reads_its_group_from() -> None:
    training = det.metrics_report(_metric("training", 4, loss=0.5), 1).model_dump(mode="json")
    assert training["metrics"] == {"avg_metrics": {"loss": 0.5}}
    assert training["totalBatches"] == 4 and training["trialRunId"] == 1
    assert training["endTime"] == "2023-11-14T22:13:24.000Z"
    validation = det.metrics_report(_metric("validation", 4, loss=0.5), 2)
    assert validation.metrics == {"validation_metrics": {"loss": 0.5}}


def _entry(line: str, rank: int = 0, stream: str = "stdout") -> rest.LogEntry:
    return rest.LogEntry(
        id=5,
        trial_id=7,
        allocation_id="a1",
        rank=rank,
        stream=stream,
        time=1_700_000_000.0,
        line=line,
    )


def test_a_log_line_reads_with_its_level_agent_and_a_message_det_prints_as_is() -> None:
    log = det.trial_log(_entry("WARNING:root:slow step\n"), {"a1": "agent-1"})
    assert log.id == "5" and log.level == det.LogLevel.WARNING and log.agent_id == "agent-1"
    assert log.container_id == "a1" and log.stdtype == "stdout" and log.rank_id == 0
    assert log.message == "[2023-11-14T22:13:20Z] [rank=0] || WARNING:root:slow step\n"
    assert det.level_of("plain text") == det.LogLevel.INFO
    assert det.level_of("ERROR: boom") == det.LogLevel.ERROR


def test_log_filters_match_every_one_given() -> None:
    log = det.trial_log(_entry("INFO: loss 0.5", rank=1, stream="stderr"), {"a1": "agent-1"})
    t = 1_700_000_000.0
    assert det.LogQuery().matches(log, t)
    assert det.LogQuery(rank_ids=frozenset({1}), stdtypes=frozenset({"stderr"})).matches(log, t)
    assert not det.LogQuery(rank_ids=frozenset({0})).matches(log, t)
    assert not det.LogQuery(agent_ids=frozenset({"agent-2"})).matches(log, t)
    assert not det.LogQuery(levels=frozenset({det.LogLevel.ERROR})).matches(log, t)
    assert det.LogQuery(before=t, after=t - 1).matches(log, t)
    assert not det.LogQuery(after=t).matches(log, t)
    assert det.LogQuery(search="loss").matches(log, t)
    assert not det.LogQuery(search="accuracy").matches(log, t)
    assert det.LogQuery(regex=det.search_pattern(r"loss \d")).matches(log, t)
    assert det.parse_time("2023-11-14T22:13:20Z", "timestampAfter") == t
    with pytest.raises(InvalidRequest, match="timestampAfter 'yesterday' is no RFC 3339"):
        det.parse_time("yesterday", "timestampAfter")
    with pytest.raises(InvalidRequest, match="is no regular expression"):
        det.search_pattern("(")


@pytest.fixture(scope="module")
def master(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Master]:
    home = tmp_path_factory.mktemp("det")
    db = Database(sqlite_url(home / "assay.db"))
    m = Master(MasterConfig(), db, home / "home")
    asyncio.run(m.users.ensure_admin(ADMIN_PASSWORD))
    yield m
    db.dispose()


def _calls(master: Master, *paths: tuple[str, str]) -> list[httpx.Response]:
    app = create_app(master)

    async def run() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url=BASE) as http:
            login = await http.post(
                "/det/api/v1/auth/login", json={"username": "admin", "password": ADMIN_PASSWORD}
            )
            headers = {"Authorization": f"Bearer {login.json()['token']}"}
            return [await http.request(m, p, headers=headers) for m, p in paths]

    return asyncio.run(run())


def test_trial_routes_refuse_in_one_line_before_any_stream_starts(master: Master) -> None:
    answers = _calls(
        master,
        ("GET", "/det/api/v1/trials/42"),
        ("GET", "/det/api/v1/trials/42/workloads"),
        ("GET", "/det/api/v1/trials/42/logs?follow=true"),
        ("POST", "/det/api/v1/trials/42/kill"),
        ("GET", "/det/api/v1/experiments/42/trials"),
        ("GET", "/det/api/v1/trials/42/logs?timestampBefore=soon"),
        ("GET", "/det/api/v1/trials/42/logs?searchText=(&enableRegex=true"),
        ("GET", "/det/api/v1/trials/metrics/trial_metrics?group=training"),
        ("GET", "/det/api/v1/trials/metrics/training_metrics?trialIds=1&trialIds=1"),
        ("GET", "/det/api/v1/trials/metrics/validation_metrics?trialIds=42"),
        ("GET", "/det/api/v1/experiments/1/trials?sortBy=SORT_BY_NOTHING"),
    )
    statuses = [a.status_code for a in answers]
    assert statuses == [404, 404, 404, 404, 404, 400, 400, 400, 400, 404, 400], statuses
    for answer in answers:
        body = answer.json()
        assert answer.headers["content-type"].startswith("application/json")
        assert body["error"]["error"] == body["message"] and "\n" not in body["message"]
    assert "trial 42" in answers[0].json()["message"]
    assert "timestampBefore 'soon' is no RFC 3339 time" in answers[5].json()["message"]
    assert "trialIds" in answers[7].json()["message"]
    assert "names trial 1 twice" in answers[8].json()["message"]
