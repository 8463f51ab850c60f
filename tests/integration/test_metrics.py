"""``GET /metrics`` on a real cluster after a real experiment: Prometheus's own parser reads
it, its figures are the cluster's (agents, slots, the queue, the rows stored), every metric the
shipped Grafana dashboard queries is there, and only admins and the scrape token read it."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import httpx
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.cluster import ROOT, Cluster, serve
from tests.integration.test_lifecycle import counter_config

pytestmark = pytest.mark.integration

SCRAPE_TOKEN = "a-scrape-token-for-the-tests"
DASHBOARD = ROOT / "deploy" / "grafana" / "assay-master.json"


@pytest.fixture(scope="module")
def cluster(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("metrics")
    config = root / "master.yaml"
    config.write_text(yaml.safe_dump({"observability": {"scrape_token": SCRAPE_TOKEN}}))
    c = Cluster(root / "home", master_config=config)
    c.start_master()
    c.start_agent("agent-1", slots=2)
    yield from serve(c, request)


@pytest.fixture(scope="module")
def experiment(cluster: Cluster) -> int:
    exp_id = cluster.submit(counter_config(length=20))
    cluster.wait_state(exp_id, "COMPLETED")
    return exp_id


def scrape(cluster: Cluster, token: str | None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.get(f"{cluster.url}/metrics", headers=headers)


Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def samples(text: str) -> Samples:
    """Every sample, by its name and its labels (sorted)."""
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(
    found: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str
) -> float:
    return found[(name, tuple(sorted(labels.items())))]


def test_the_metrics_parse_and_are_the_clusters_figures(cluster: Cluster, experiment: int) -> None:
    answer = scrape(cluster, SCRAPE_TOKEN)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/plain; version=0.0.4")
    found = samples(answer.text)
    assert value(found, "assay_agents", pool="default", state="connected") == 1
    assert value(found, "assay_agents", pool="default", state="disconnected") == 0
    # The experiment has ended: both slots are free, nothing waits.
    assert value(found, "assay_slots", pool="default", state="free") == 2
    assert value(found, "assay_slots", pool="default", state="allocated") == 0
    assert value(found, "assay_queue_jobs", pool="default", state="queued") == 0
    assert value(found, "assay_queue_oldest_wait_seconds", pool="default") == 0
    # Every metrics report the trials made is a row counted once.
    stored = sum(len(cluster.client.metrics(t.id)) for t in cluster.client.trials(experiment))
    assert stored > 0
    assert value(found, "assay_ingested_rows_total", kind="metrics") == stored
    assert value(found, "assay_ingested_rows_total", kind="logs") > 0
    assert value(found, "assay_scheduling_pass_seconds_count") >= 1
    submitted = value(
        found,
        "assay_http_request_duration_seconds_count",
        method="POST",
        route="/api/v1/experiments",
        status="201",
    )
    assert submitted == 1
    assert value(found, "process_resident_memory_bytes") > 0
    # The served master times its garbage collections (each generation shown from the start).
    for generation in ("0", "1", "2"):
        assert value(found, "assay_gc_pause_seconds_count", generation=generation) >= 0
    assert value(found, "assay_db_pool_connections", state="checked_out") >= 0


def test_a_trials_reports_checkpoints_and_preemption_watch_go_through_its_agent(
    cluster: Cluster, experiment: int
) -> None:
    """The agent carries its trials' metric reports and checkpoints over its own connection,
    and its trials watch for preemption through it: every report is stored and every
    checkpoint registered, and not one came as a request of its own."""
    found = samples(scrape(cluster, SCRAPE_TOKEN).text)
    trials = cluster.client.trials(experiment)
    stored = sum(len(cluster.client.metrics(t.id)) for t in trials)
    assert stored > 0
    assert value(found, "assay_ingested_rows_total", kind="metrics") == stored
    assert all(cluster.client.trial(t.id).latest_checkpoint for t in trials)
    asked = {
        (dict(labels).get("method"), dict(labels).get("route"))
        for name, labels in found
        if name.startswith("assay_http")
    }
    # The harness's other calls still come over HTTP.
    assert ("GET", "/api/v1/trials/{trial_id}/searcher/operation") in asked
    assert ("POST", "/api/v1/trials/{trial_id}/metrics") not in asked
    assert ("POST", "/api/v1/checkpoints") not in asked
    assert ("GET", "/api/v1/allocations/{allocation_id}/signals/preemption") not in asked


def test_every_metric_the_grafana_dashboard_queries_exists(
    cluster: Cluster, experiment: int
) -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    exprs.append(
        next(v for v in dashboard["templating"]["list"] if v["name"] == "pool")["query"]["query"]
    )
    queried = {m for e in exprs for m in re.findall(r"\b(?:assay|process)_[a-z_]+\b", e)}
    assert len(queried) >= 10, queried
    names = {name for name, _ in samples(scrape(cluster, SCRAPE_TOKEN).text)}
    assert queried - names == set()


def test_only_admins_and_the_scrape_token_read_the_metrics(cluster: Cluster) -> None:
    assert scrape(cluster, None).status_code == 401
    assert scrape(cluster, "not-the-scrape-token").status_code == 401
    user = cluster.add_user("metrics-reader")
    refused = scrape(cluster, user.http.token)
    assert refused.status_code == 403
    assert "only an admin" in refused.json()["error"]["message"]
    assert scrape(cluster, cluster.client.http.token).status_code == 200
