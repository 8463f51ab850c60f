"""Determined's job queue and cluster requests under ``/det`` in process, on a real master
(SQLite) with two pools (priority and fair share) and an agent of one slot: the queue in
scheduling order, paged and filtered as ``det job list`` asks; updates as ``det job update``
and the web UI's moves send them, refused whole in one line; pools, agents, slots and live
allocations as ``det job list``, ``det agent list``, ``det slot list`` and ``det task list``
read them.

The real ``det`` drives the same routes in ``tests/integration/test_det_jobs.py``."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from assay.api import create_app
from assay.config import MasterConfig
from assay.context import pack_context
from assay.db import Database, sqlite_url
from assay.master import Actor, Master, Submission
from assay.rest import determined as det

BASE = "http://127.0.0.1:8080"
PASSWORD = "Admin-pass-1"
ADMIN = Actor(user_id=1, username="admin", admin=True, token_id=1)
POOLS = {
    "resource_pools": [
        {"pool_name": "default", "scheduler": {"type": "priority"}},
        {
            "pool_name": "shared",
            "description": "fair share",
            "scheduler": {"type": "fair_share", "fitting_policy": "worst"},
        },
    ]
}


class Det:
    """A master under test with its app, and the admin's token for Determined's requests."""

    def __init__(self, master: Master) -> None:
        self.master = master
        self.app = create_app(master)
        self.token = ""

    def calls(self, *requests: tuple[str, str, dict[str, Any]]) -> list[httpx.Response]:
        async def run() -> list[httpx.Response]:
            transport = httpx.ASGITransport(app=self.app)
            headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
            async with httpx.AsyncClient(
                transport=transport, base_url=BASE, headers=headers
            ) as http:
                return [await http.request(m, p, **kw) for m, p, kw in requests]

        return asyncio.run(run())

    def get(self, path: str) -> Any:
        (answer,) = self.calls(("GET", path, {}))
        assert answer.status_code == 200, answer.text
        return answer.json()

    def update(self, *updates: dict[str, Any]) -> httpx.Response:
        # As Determined's client sends it: JSON, no Content-Type, unset fields as null.
        body = json.dumps({"updates": list(updates)}).encode()
        return self.calls(("POST", "/det/api/v1/job-queues", {"content": body}))[0]

    def queue(self, pool: str = "") -> list[tuple[str, str, int, str]]:
        """(name, state, jobsAhead, slots acquired/needed) of each job of ``pool``'s list."""
        query = f"?resourcePool={pool}" if pool else ""
        jobs = self.get(f"/det/api/v1/job-queues-v2{query}")["jobs"]
        return [
            (
                j["full"]["name"],
                j["full"]["summary"]["state"],
                j["full"]["summary"]["jobsAhead"],
                f"{j['full']['allocatedSlots']}/{j['full']['requestedSlots']}",
            )
            for j in jobs
        ]


def refusal(answer: httpx.Response, status: int) -> str:
    """The one-line message of an error answer in Determined's shape."""
    assert answer.status_code == status, answer.text
    body = det.DetError.model_validate(answer.json())
    assert body.error.error == body.message and "\n" not in body.message
    return body.message


def config(name: str, priority: int = 42) -> str:
    return yaml.safe_dump(
        {
            "name": name,
            "entrypoint": "python3 train.py",
            "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 100}},
            "resources": {"priority": priority},
        }
    )


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Det]:
    """A master with two experiments in its default pool, the first running on the one slot
    of agent ``a1``, the second queued behind it."""
    home = tmp_path_factory.mktemp("det-jobs")
    db = Database(sqlite_url(home / "assay.db"))
    master = Master(MasterConfig.model_validate(POOLS), db, home / "home")
    master.core.cluster_id = "c0ffee"
    asyncio.run(master.users.ensure_admin(PASSWORD))
    ctx = home / "ctx"
    ctx.mkdir()
    (ctx / "train.py").write_text("print('hello')\n")
    context = pack_context(Path(ctx)).data
    for name in ("first_job", "second_job"):
        asyncio.run(master.experiments.create(ADMIN, Submission(config(name), context)))
    hello = {"type": "hello", "agent_id": "a1", "slots": [{"id": "0", "type": "cuda"}]}

    async def agent(message: dict[str, Any]) -> None:
        pass

    asyncio.run(master.pools.join(hello, agent))
    asyncio.run(master.loops.schedule_once())
    d = Det(master)
    body = {"username": "admin", "password": det.client_hash(PASSWORD), "isHashed": True}
    (signed,) = d.calls(("POST", "/det/api/v1/auth/login", {"content": json.dumps(body)}))
    d.token = signed.json()["token"]
    yield d
    db.dispose()


def test_the_queue_lists_jobs_in_scheduling_order_paged_and_filtered(cluster: Det) -> None:
    assert cluster.queue() == [
        ("first_job", "STATE_SCHEDULED", 0, "1/1"),
        ("second_job", "STATE_QUEUED", 1, "0/1"),
    ]
    listed = cluster.get("/det/api/v1/job-queues-v2?limit=100&orderBy=ORDER_BY_ASC")
    first = listed["jobs"][0]["full"]
    assert first["type"] == "TYPE_EXPERIMENT" and first["entityId"] == "1"
    assert first["username"] == "admin" and first["resourcePool"] == "default"
    assert first["priority"] == 42 and first["isPreemptible"] is True
    assert first["submissionTime"].endswith("Z") and len(first["jobId"]) == 8
    assert listed["pagination"] == {
        "offset": 0,
        "limit": 100,
        "startIndex": 0,
        "endIndex": 2,
        "total": 2,
    }
    last = cluster.get("/det/api/v1/job-queues-v2?orderBy=ORDER_BY_DESC&limit=1")
    assert [j["full"]["name"] for j in last["jobs"]] == ["second_job"]
    assert last["pagination"]["endIndex"] == 1 and last["pagination"]["total"] == 2
    page = cluster.get("/det/api/v1/job-queues-v2?offset=1&limit=1")
    assert [j["full"]["name"] for j in page["jobs"]] == ["second_job"]
    queued = cluster.get("/det/api/v1/job-queues-v2?states=STATE_QUEUED")
    assert [j["full"]["name"] for j in queued["jobs"]] == ["second_job"]
    older = cluster.get("/det/api/v1/job-queues")
    assert [j["name"] for j in older["jobs"]] == ["first_job", "second_job"]
    assert cluster.queue("shared") == []
    (unknown,) = cluster.calls(("GET", "/det/api/v1/job-queues-v2?resourcePool=nope", {}))
    assert "resource pool 'nope' does not exist" in refusal(unknown, 404)
    (bad,) = cluster.calls(("GET", "/det/api/v1/job-queues-v2?orderBy=SIDEWAYS", {}))
    assert "orderBy" in refusal(bad, 400)


def test_updates_move_and_reprioritize_jobs_or_are_refused_whole_in_one_line(
    cluster: Det,
) -> None:
    jobs = cluster.get("/det/api/v1/job-queues-v2")["jobs"]
    first, second = (j["full"]["jobId"] for j in jobs)
    nulls = {"priority": None, "weight": None, "resourcePool": None}
    moved = cluster.update({"jobId": second, "aheadOf": first, **nulls})
    assert moved.status_code == 200 and moved.json() == {}, moved.text
    assert [name for name, *_ in cluster.queue()] == ["second_job", "first_job"]
    back = cluster.update({"jobId": second, "behindOf": first})
    assert back.status_code == 200, back.text
    assert [name for name, *_ in cluster.queue()] == ["first_job", "second_job"]

    weight = cluster.update({"jobId": second, "weight": 2.0, "priority": None})
    said = refusal(weight, 409)
    assert f"weight cannot be set on job {second}" in said
    assert 'pool "default" uses the priority scheduler' in said and "--priority" in said
    assert "must be from 1" in refusal(cluster.update({"jobId": second, "priority": 0}), 400)
    assert "is not in the queue" in refusal(
        cluster.update({"jobId": "f00dcafe", "priority": 1}), 404
    )
    both = cluster.update({"jobId": first, "priority": 0}, {"jobId": second, "weight": 3})
    said = refusal(both, 400)
    assert said.startswith("the batch was refused and nothing was changed: 2 problems")
    assert "priority must be from 1" in said and "weight cannot be set" in said
    nothing = refusal(cluster.update({"jobId": first}), 400)
    assert f"nothing to change for job {first}" in nothing
    typed = refusal(cluster.update({"jobId": first, "priority": "high"}), 400)
    assert "updates.0.priority" in typed

    batch = cluster.update({"jobId": second, "priority": 1}, {"jobId": first, "priority": 1})
    assert batch.status_code == 200, batch.text
    listed = cluster.get("/det/api/v1/job-queues-v2")["jobs"]
    assert [(j["full"]["name"], j["full"]["priority"]) for j in listed] == [
        ("first_job", 1),
        ("second_job", 1),
    ]

    to_shared = cluster.update({"jobId": second, "resourcePool": "shared"})
    assert to_shared.status_code == 200, to_shared.text
    assert [name for name, *_ in cluster.queue("shared")] == ["second_job"]
    fair = refusal(cluster.update({"jobId": second, "aheadOf": first}), 409)
    assert 'pool "shared" uses the fair_share scheduler, which has no queue order' in fair
    assert "only be moved relative to its own pool's jobs" in fair
    weighted = cluster.update({"jobId": second, "weight": 2.5})
    assert weighted.status_code == 200, weighted.text
    (shared,) = cluster.get("/det/api/v1/job-queues-v2?resourcePool=shared")["jobs"]
    assert shared["full"]["weight"] == 2.5


def test_pools_agents_slots_and_tasks_show_what_holds_the_slot(cluster: Det) -> None:
    pools = cluster.get("/det/api/v1/resource-pools")["resourcePools"]
    default, shared = pools
    assert (default["name"], default["defaultComputePool"], default["defaultAuxPool"]) == (
        "default",
        True,
        True,
    )
    assert default["schedulerType"] == "SCHEDULER_TYPE_PRIORITY"
    assert default["details"]["priorityScheduler"] == {"preemption": True, "defaultPriority": 42}
    assert (default["numAgents"], default["slotsAvailable"], default["slotsUsed"]) == (1, 1, 1)
    assert default["slotType"] == "TYPE_CUDA" and default["type"] == "RESOURCE_POOL_TYPE_STATIC"
    assert shared["schedulerType"] == "SCHEDULER_TYPE_FAIR_SHARE"
    assert shared["schedulerFittingPolicy"] == "FITTING_POLICY_WORST"
    assert shared["defaultComputePool"] is False and shared["details"]["priorityScheduler"] is None
    assert shared["numAgents"] == 0 and shared["description"] == "fair share"

    tasks = cluster.get("/det/api/v1/tasks")["allocationIdToSummary"]
    ((alloc_id, task),) = tasks.items()
    assert task["name"] == "Trial 1 (Experiment 1)" and task["taskId"] == "trial-1"
    assert task["slotsNeeded"] == 1 and task["schedulerType"] == "priority"
    assert list(task["resources"][0]["agentDevices"]) == ["a1"]
    assert task["resources"][0]["containerId"] == alloc_id

    (agent,) = cluster.get("/det/api/v1/agents")["agents"]
    assert agent["id"] == "a1" and agent["resourcePools"] == ["default"]
    assert agent["enabled"] is True and list(agent["containers"]) == [alloc_id]
    slot = agent["slots"]["0"]
    assert slot["container"]["id"] == alloc_id
    assert slot["device"]["type"] == "TYPE_CUDA" and slot["device"]["id"] == 0
    assert agent["slotStats"]["typeStats"]["TYPE_CUDA"]["total"] == 1
    bare = cluster.get("/det/api/v1/agents?excludeSlots=true&excludeContainers=true")
    assert bare["agents"][0]["slots"] == {} and bare["agents"][0]["containers"] == {}
    assert cluster.get("/det/api/v1/agents?label=gpu")["agents"] == []
    assert cluster.get("/det/api/v1/agents/a1")["agent"]["id"] == "a1"
    assert cluster.get("/det/api/v1/agents/a1/slots")["slots"][0]["id"] == "0"
    assert cluster.get("/det/api/v1/agents/a1/slots/0")["slot"]["enabled"] is True

    missing, no_slot, disable, enable, slot_off = cluster.calls(
        ("GET", "/det/api/v1/agents/nope", {}),
        ("GET", "/det/api/v1/agents/a1/slots/7", {}),
        ("POST", "/det/api/v1/agents/a1/disable", {"content": b'{"drain": true}'}),
        ("POST", "/det/api/v1/agents/a1/enable", {}),
        ("POST", "/det/api/v1/agents/a1/slots/0/disable", {"content": b"{}"}),
    )
    assert "agent nope is not connected" in refusal(missing, 404)
    assert "agent a1 has no slot 7" in refusal(no_slot, 404)
    assert "stop the agent's process" in refusal(disable, 400)
    assert "agent a1 cannot be enabled" in refusal(enable, 400)
    assert "assay agent --slots N" in refusal(slot_off, 400)


def test_the_queue_and_the_cluster_are_for_signed_in_users(cluster: Det) -> None:
    for path in ("/det/api/v1/job-queues-v2", "/det/api/v1/agents", "/det/api/v1/tasks"):
        (answer,) = cluster.calls(("GET", path, {"headers": {"Authorization": ""}}))
        assert answer.status_code == 401, (path, answer.text)
        assert det.DetError.model_validate(answer.json()).error.reason == "Unauthenticated"
