"""``assay agent list``, ``assay slot list``, ``assay resource-pool list`` and ``assay master
info`` against a real cluster (one agent with two slots)."""

from __future__ import annotations

import json

import pytest

from tests.integration.cluster import Cluster

pytestmark = pytest.mark.integration


def test_agent_slot_and_pool_listings_show_the_running_agent(cluster: Cluster) -> None:
    agents = json.loads(cluster.cli("agent", "list", "--json", check=True).stdout)
    assert [(a["id"], a["connected"], len(a["slots"])) for a in agents] == [("agent-1", True, 2)]
    table = cluster.cli("agent", "list", check=True).stdout
    assert "agent-1" in table and "Traceback" not in table

    slots = json.loads(cluster.cli("slot", "list", "--json", check=True).stdout)
    assert [s["agent_id"] for s in slots] == ["agent-1", "agent-1"]
    assert all(s["allocated"] is False for s in slots)
    assert "agent-1" in cluster.cli("slot", "list", check=True).stdout

    pools = json.loads(cluster.cli("resource-pool", "list", "--json", check=True).stdout)
    (pool,) = [p for p in pools if p["agents"]]
    assert (pool["agents"], pool["slots"]) == (1, 2)
    assert pool["name"] in cluster.cli("resource-pool", "list", check=True).stdout


def test_master_info_names_version_url_database_and_uptime(cluster: Cluster) -> None:
    from assay import __version__

    info = json.loads(cluster.cli("master", "info", "--json", check=True).stdout)
    assert info["version"] == __version__
    assert info["database"] == "sqlite"
    assert info["url"].rstrip("/") == cluster.url.rstrip("/")
    assert info["uptime_seconds"] >= 0
    text = cluster.cli("master", "info", check=True).stdout
    assert "database:" in text and "uptime:" in text and __version__ in text


def test_an_unreachable_master_is_one_line_not_a_traceback(cluster: Cluster) -> None:
    result = cluster.cli("--master", "http://127.0.0.1:9", "agent", "list")
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
