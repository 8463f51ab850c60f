"""What the web UI reads: live events over server-sent events from a real master and agent,
resumed without gaps by Last-Event-ID; sorted and paged lists; one-time sign-in links."""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
import yaml

from assay import rest
from assay.errors import Unauthorized
from tests.integration.cluster import Cluster

pytestmark = pytest.mark.integration


@dataclass
class Sse:
    """One message of a server-sent event stream."""

    event: str
    data: Any
    id: str | None = None


@dataclass
class Stream:
    """A server-sent event stream read message by message (comments are skipped)."""

    lines: Iterator[str]
    subscribed: str = ""
    """The id of the last change before the subscription (its ``: subscribed`` line)."""
    seen: list[Sse] = field(default_factory=list)

    def next(self) -> Sse:
        event, data, event_id = "message", [], None
        for line in self.lines:
            if not line:
                if data:
                    message = Sse(event, json.loads("\n".join(data)), event_id)
                    self.seen.append(message)
                    return message
                continue
            if line.startswith(":") or line.startswith("retry:"):
                continue
            name, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if name == "event":
                event = value
            elif name == "data":
                data.append(value)
            elif name == "id":
                event_id = value
        raise AssertionError("the stream ended")

    def until(self, done: Any, limit: int = 10_000) -> list[Sse]:
        """Messages up to and including the first that ``done`` accepts."""
        got = []
        for _ in range(limit):
            message = self.next()
            got.append(message)
            if done(message):
                return got
        raise AssertionError(f"no wanted message in {limit}")


def open_stream(
    http: httpx.Client, path: str, params: dict[str, Any], headers: dict[str, str]
) -> Iterator[Stream]:
    with http.stream("GET", path, params=params, headers=headers) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        lines = response.iter_lines()
        # The first comment says the subscription is in place (nothing after it is missed)
        # and names the last change before it.
        assert next(lines).startswith("retry:")
        subscribed = next(lines)
        assert subscribed.startswith(": subscribed "), subscribed
        yield Stream(lines, subscribed.removeprefix(": subscribed "))


def _config(length: int, **extra: Any) -> str:
    return yaml.safe_dump(
        {
            "name": "live",
            "entrypoint": "python3 train.py",
            "hyperparameters": {"step_seconds": 0.01, "checkpoint_every": 10, "x": 1.0},
            "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": length}},
            **extra,
        }
    )


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    c = Cluster(tmp_path_factory.mktemp("live") / "home")
    try:
        c.start_master()
        c.start_agent("agent-1", slots=1)
        yield c
    finally:
        c.stop()


def _flat(messages: list[Sse]) -> dict[str, list[Any]]:
    """Every change the batches carried, by kind, in order."""
    out: dict[str, list[Any]] = {"experiments": [], "trials": [], "metrics": []}
    for m in messages:
        if m.event == rest.EventKind.BATCH:
            for kind, items in out.items():
                items.extend(m.data[kind])
    return out


def test_a_viewer_sees_states_and_metrics_live_and_resumes_without_gap_or_repeat(
    cluster: Cluster,
) -> None:
    exp_id = cluster.submit(_config(30), activate=False)
    headers = cluster.auth_headers()
    with httpx.Client(base_url=cluster.url, timeout=60) as http:
        params = {"experiment_id": exp_id}
        for stream in open_stream(http, "/api/v1/events", params, headers):
            cluster.client.transition(exp_id, "activate")
            got = stream.until(
                lambda m: any(e["state"] == "COMPLETED" for e in m.data.get("experiments", []))
            )
        flat = _flat(got)
        assert flat["experiments"][0]["state"] == "ACTIVE"
        trial_states = [t["state"] for t in flat["trials"]]
        assert "RUNNING" in trial_states and trial_states[-1] == "COMPLETED"
        steps = [
            m["steps_completed"]
            for batch in flat["metrics"]
            for m in batch["metrics"]
            if m["group"] == "training"
        ]
        assert steps == list(range(1, 31))  # every training report, once, in order
        stored = cluster.client.metrics(flat["trials"][0]["id"], "validation")
        shown = [m for b in flat["metrics"] for m in b["metrics"] if m["group"] == "validation"]
        assert [m.model_dump() for m in stored] == [
            rest.Metric.model_validate(m).model_dump() for m in shown
        ]
        assert all(m.id and m.event == "batch" for m in got)

        # Cut after the first batch: a reconnect with its id gets exactly the rest (batches
        # may be merged differently, and later ones may follow: compare what they carried).
        first, rest_of = got[0], _flat(got[1:])
        for again in open_stream(
            http, "/api/v1/events", params, {**headers, "Last-Event-ID": str(first.id)}
        ):
            replayed = _flat(
                again.until(
                    lambda m: any(e["state"] == "COMPLETED" for e in m.data.get("experiments", []))
                )
            )
        assert {k: v[: len(rest_of[k])] for k, v in replayed.items()} == rest_of
        assert replayed["experiments"] == rest_of["experiments"]

        # An id of another run of the master (or unknown) asks the viewer to read afresh.
        for stale in open_stream(
            http, "/api/v1/events", params, {**headers, "Last-Event-ID": "0000-1"}
        ):
            message = stale.next()
        epoch, seq = str(got[-1].id).split("-")
        assert message.event == "resync" and message.id is not None
        assert message.id.split("-")[0] == epoch and int(message.id.split("-")[1]) >= int(seq)


def test_the_list_stream_takes_the_token_as_a_query_parameter_and_shows_experiments_only(
    cluster: Cluster,
) -> None:
    token = str(cluster.client.http.token)
    with httpx.Client(base_url=cluster.url, timeout=60) as http:
        refused = http.get("/api/v1/events")
        assert refused.status_code == 401 and "sign in" in refused.json()["error"]["message"]
        assert http.get("/api/v1/events", params={"experiment_id": 10**6}).status_code == 401
        for stream in open_stream(http, "/api/v1/events", {"token": token}, {}):
            exp_id = cluster.submit(_config(5), activate=False)
            cluster.client.transition(exp_id, "cancel")
            cluster.wait_state(exp_id, "CANCELED")
            cluster.client.transition(exp_id, "archive")
            got = stream.until(lambda m: any(e["archived"] for e in m.data["experiments"]))
        assert all(not m.data["trials"] and not m.data["metrics"] for m in got)
        assert {e["id"] for m in got for e in m.data["experiments"]} == {exp_id}
        assert (
            http.get(
                "/api/v1/events", params={"experiment_id": 10**6}, headers=cluster.auth_headers()
            ).status_code
            == 404
        )


def test_followed_logs_carry_line_ids_and_resume_after_last_event_id(cluster: Cluster) -> None:
    exp_id = cluster.submit(_config(10))
    cluster.wait_state(exp_id, "COMPLETED")
    trial_id = cluster.client.trials(exp_id)[0].id
    lines = cluster.client.logs(trial_id)
    assert len(lines) >= 2
    with httpx.Client(base_url=cluster.url, timeout=60) as http:
        path = f"/api/v1/trials/{trial_id}/logs"
        params = {"follow": "true", "token": str(cluster.client.http.token)}
        resume = {"Last-Event-ID": str(lines[0].id)}
        with http.stream("GET", path, params=params, headers=resume) as response:
            assert response.status_code == 200
            stream = Stream(response.iter_lines())
            got = stream.until(lambda m: m.event == "end")
    logged = [m for m in got if m.event == "log"]
    assert [m.id for m in logged] == [str(e.id) for e in lines[1:]]
    assert [m.data["line"] for m in logged] == [e.line for e in lines[1:]]


def test_lists_sort_filter_and_page_on_the_server(cluster: Cluster) -> None:
    client = cluster.client
    grid = {
        "name": "Sorted-grid",
        "labels": ["sorting"],
        "entrypoint": "python3 train.py",
        "hyperparameters": {
            "step_seconds": 0.0,
            "checkpoint_every": 100,
            "x": {"type": "categorical", "vals": [3.0, 1.0, 2.0, 5.0]},
        },
        "searcher": {"name": "grid", "metric": "loss", "max_length": {"batches": 1}},
    }
    exp_id = cluster.submit(yaml.safe_dump(grid))
    cluster.wait_state(exp_id, "COMPLETED")
    page = client.trial_page(exp_id, sort=rest.TrialSort.BEST, limit=3)
    assert page.pagination is not None and page.pagination.total == 4
    assert [t.best_validation for t in page.trials] == [1.0, 2.0, 3.0]
    worst = client.trial_page(exp_id, sort=rest.TrialSort.BEST, order=rest.SortOrder.DESC)
    assert [t.best_validation for t in worst.trials] == [5.0, 3.0, 2.0, 1.0]
    second = client.trial_page(exp_id, sort=rest.TrialSort.BEST, limit=3, offset=3)
    assert [t.best_validation for t in second.trials] == [5.0]

    found = client.list_experiments(name="sorted-GRID", label="sorting")
    assert [e.id for e in found.experiments] == [exp_id] and found.pagination.total == 1
    assert client.list_experiments(label="no-such-label").pagination.total == 0
    by_name = client.list_experiments(
        sort=rest.ExperimentSort.NAME, order=rest.SortOrder.ASC, archived=True, limit=1000
    )
    names = [e.name for e in by_name.experiments]
    assert names == sorted(names)
    with httpx.Client(base_url=cluster.url, timeout=30) as http:
        bad = http.get(
            "/api/v1/experiments", params={"sort": "colour"}, headers=cluster.auth_headers()
        )
    assert bad.status_code == 400 and "sort" in bad.text


def test_a_one_time_sign_in_token_signs_a_browser_in_once(cluster: Cluster) -> None:
    made = cluster.client.one_time_token()
    from assay.client import Client

    with pytest.raises(Unauthorized):  # not a bearer token
        Client(cluster.url, token=made.token).me()
    browser = {"X-Assay-CSRF": "1"}  # the header the web UI sends
    with httpx.Client(base_url=cluster.url, timeout=30, headers=browser) as http:
        answer = http.post("/api/v1/auth/one-time", json={"token": made.token})
        assert answer.status_code == 200, answer.text
        assert answer.json()["user"]["username"] == "admin"
        assert "token" not in answer.json(), "the session is the cookie alone"
        assert http.get("/api/v1/me").json()["username"] == "admin"
        spent = http.post("/api/v1/auth/one-time", json={"token": made.token})
        assert spent.status_code == 401 and "used already" in spent.text
        # The browser's cookie signs in the streams EventSource opens (no header).
        for stream in open_stream(http, "/api/v1/events", {}, {}):
            assert stream.seen == []


def test_the_queue_and_cluster_pages_are_told_when_jobs_and_agents_change(
    cluster: Cluster,
) -> None:
    headers = cluster.auth_headers()
    with httpx.Client(base_url=cluster.url, timeout=60) as http:
        params = {"queue": "true", "cluster": "true"}
        for stream in open_stream(http, "/api/v1/events", params, headers):
            cluster.start_agent("agent-live", slots=1)
            stream.until(lambda m: m.data["cluster"])
            exp_id = cluster.submit(_config(5), activate=False)
            queued = stream.until(lambda m: m.data["queue"])
            agent = cluster.agents.pop("agent-live")
            agent.send_signal(signal.SIGTERM)
            agent.wait(timeout=30)
            left = stream.until(lambda m: m.data["cluster"])
        assert any(e["id"] == exp_id for m in queued for e in m.data["experiments"])
        assert not any(a.id == "agent-live" and a.connected for a in cluster.client.agents())
        assert left[-1].event == "batch"
        cluster.client.transition(exp_id, "cancel")

        # The list page's stream is not told of either.
        for plain in open_stream(http, "/api/v1/events", {}, headers):
            other = cluster.submit(_config(5), activate=False)
            got = plain.until(
                lambda m, other=other: any(e["id"] == other for e in m.data["experiments"])
            )
        assert not any(m.data["queue"] or m.data["cluster"] for m in got)
        cluster.client.transition(other, "cancel")


def test_a_read_names_its_position_and_a_stream_resumed_there_brings_what_it_missed(
    cluster: Cluster,
) -> None:
    exp_id = cluster.submit(_config(5), activate=False)
    headers = cluster.auth_headers()
    with httpx.Client(base_url=cluster.url, timeout=60) as http:
        read = http.get(f"/api/v1/experiments/{exp_id}", headers=headers)
        assert read.json()["state"] == "PAUSED"
        position = read.headers["X-Assay-Event-Id"]
        # Committed after the read, before any stream: a fresh stream does not bring it...
        cluster.client.transition(exp_id, "cancel")
        cluster.wait_state(exp_id, "CANCELED")
        params = {"experiment_id": exp_id}
        for fresh in open_stream(http, "/api/v1/events", params, headers):
            epoch, seq = position.split("-")
            later_epoch, later_seq = fresh.subscribed.split("-")
            assert later_epoch == epoch and int(later_seq) > int(seq), "the read is behind"
        # ...and one resumed at the read's position does.
        for resumed in open_stream(
            http, "/api/v1/events", params, {**headers, "Last-Event-ID": position}
        ):
            got = resumed.until(
                lambda m: any(e["state"] == "CANCELED" for e in m.data.get("experiments", []))
            )
        assert [e["id"] for m in got for e in m.data["experiments"]][-1] == exp_id
