"""An agent running a distributed allocation: the entrypoint once per node with the node's
layout, and the per-slot launcher's ranks living and dying together, the exit reported once."""

from __future__ import annotations

import asyncio
import hashlib
import json
import socket
from pathlib import Path
from typing import Any

import pytest

from assay.agent import Agent, Slot
from assay.agent._runner import AgentEnv, AllocationRunner
from assay.client import HttpSession
from assay.context import pack_context
from assay.errors import InvalidRequest
from assay.protocol import LogEntry, RankLayout, Start

ECHO_RANK = (
    "import json, os\n"
    "keys = ['RANK', 'WORLD_SIZE', 'LOCAL_RANK', 'LOCAL_WORLD_SIZE', 'GROUP_RANK', 'NODE_RANK',\n"
    "        'MASTER_ADDR', 'MASTER_PORT', 'ASSAY_RENDEZVOUS_PORT', 'CUDA_VISIBLE_DEVICES',\n"
    "        'ASSAY_RANK_LAYOUT']\n"
    "print(json.dumps({k: os.environ.get(k) for k in keys}))\n"
)

FAIL_RANK_ONE = (
    "import os, sys, time\n"
    "if os.environ['RANK'] == '1':\n"
    "    time.sleep(0.2)\n"
    "    sys.exit(3)\n"
    "print('waiting', flush=True)\n"
    "time.sleep(60)\n"
)


class Recorder:
    def __init__(self) -> None:
        self.logs: list[LogEntry] = []
        self.starts: list[str] = []
        self.exits: list[tuple[str, int | None, str]] = []

    def on_log(self, entry: LogEntry) -> None:
        self.logs.append(entry)

    async def on_start(self, alloc_id: str) -> None:
        self.starts.append(alloc_id)

    async def on_exit(self, alloc_id: str, code: int | None, reason: str) -> None:
        self.exits.append((alloc_id, code, reason))


def layout(local: int = 2, first: int = 2, world: int = 4) -> dict[str, Any]:
    return {
        "world_size": world,
        "node_rank": 1,
        "num_nodes": 2,
        "first_rank": first,
        "local_world_size": local,
        "master_addr": "10.1.2.3",
        "master_port": 29500,
        "rendezvous_port": 29501,
    }


PER_SLOT = "python3 -m assay.launch.per_slot python3 main.py"


def start_message(
    tmp_path: Path,
    script: str,
    distributed: dict[str, Any] | None,
    slots: int = 2,
    entrypoint: str = "python3 main.py",
) -> tuple[AgentEnv, dict[str, Any]]:
    """An agent's shared set-up with the context cached, and a start message (as JSON) for
    ``script`` on ``slots`` GPU slots."""
    ctx_dir = tmp_path / "ctx"
    ctx_dir.mkdir(exist_ok=True)
    (ctx_dir / "main.py").write_text(script)
    data = pack_context(ctx_dir).data
    sha = hashlib.sha256(data).hexdigest()
    work = tmp_path / "agent"
    # A cached context is used without asking the master.
    (work / "contexts").mkdir(parents=True, exist_ok=True)
    (work / "contexts" / f"{sha}.tar.gz").write_bytes(data)
    gpus = [Slot(id=str(i), type="cuda", uuid=f"GPU-{i}") for i in range(slots)]
    env = AgentEnv(
        agent_id="a1",
        master_url="http://127.0.0.1:9",
        work_root=work,
        http=HttpSession("http://127.0.0.1:9"),
        slots={s.id: s for s in gpus},
        kill_grace=2.0,
    )
    message: dict[str, Any] = {
        "type": "start",
        "allocation_id": "7.1",
        "trial_id": 7,
        "experiment_id": 3,
        "run": 1,
        "context": {"id": 1, "sha256": sha},
        "entrypoint": entrypoint,
        "env": {"ASSAY_TOKEN": "tok"},
        "slots": [s.id for s in gpus],
        "cluster_info": {},
    }
    if distributed is not None:
        message["distributed"] = distributed
    return env, message


def make_runner(
    tmp_path: Path,
    script: str,
    distributed: dict[str, Any] | None,
    slots: int = 2,
    entrypoint: str = PER_SLOT,
) -> tuple[AllocationRunner, Recorder]:
    env, message = start_message(tmp_path, script, distributed, slots, entrypoint)
    rec = Recorder()
    runner = AllocationRunner(
        env, Start.from_dict(message), on_log=rec.on_log, on_start=rec.on_start, on_exit=rec.on_exit
    )
    return runner, rec


def test_the_entrypoint_runs_once_per_node_with_the_nodes_layout(tmp_path: Path) -> None:
    runner, rec = make_runner(tmp_path, ECHO_RANK, layout(), entrypoint="python3 main.py")
    asyncio.run(runner.run())
    assert rec.exits == [("7.1", 0, "")]
    (entry,) = rec.logs
    assert entry.rank == 2, "the node's first rank"
    env = json.loads(entry.line)
    assert env["RANK"] is None and env["WORLD_SIZE"] is None
    assert env["CUDA_VISIBLE_DEVICES"] == "GPU-0,GPU-1"
    assert json.loads(env["ASSAY_RANK_LAYOUT"]) == layout()


def test_the_per_slot_launcher_runs_each_slot_with_its_ranks_variables(tmp_path: Path) -> None:
    runner, rec = make_runner(tmp_path, ECHO_RANK, layout())
    asyncio.run(runner.run())
    assert rec.starts == ["7.1"]
    assert rec.exits == [("7.1", 0, "")]
    seen = {}
    for entry in rec.logs:
        tag = f"[rank={entry.rank}] "
        assert entry.line.startswith(tag), entry
        seen[entry.rank] = json.loads(entry.line[len(tag) :])
    assert sorted(seen) == [2, 3]
    for rank, env in seen.items():
        del env["ASSAY_RANK_LAYOUT"]
        assert env == {
            "RANK": str(rank),
            "WORLD_SIZE": "4",
            "LOCAL_RANK": str(rank - 2),
            "LOCAL_WORLD_SIZE": "2",
            "GROUP_RANK": "1",
            "NODE_RANK": "1",
            "MASTER_ADDR": "10.1.2.3",
            "MASTER_PORT": "29500",
            "ASSAY_RENDEZVOUS_PORT": "29501",
            "CUDA_VISIBLE_DEVICES": "GPU-0,GPU-1",
        }


def test_a_single_slot_allocation_runs_one_untagged_process(tmp_path: Path) -> None:
    runner, rec = make_runner(tmp_path, ECHO_RANK, None, slots=1, entrypoint="python3 main.py")
    asyncio.run(runner.run())
    assert rec.exits == [("7.1", 0, "")]
    (entry,) = rec.logs
    assert entry.rank == 0
    env = json.loads(entry.line)
    assert env["RANK"] is None and env["ASSAY_RANK_LAYOUT"] is None


def test_a_failing_rank_stops_the_others_and_its_code_is_reported_once(tmp_path: Path) -> None:
    runner, rec = make_runner(tmp_path, FAIL_RANK_ONE, layout(local=2, first=0, world=2))
    asyncio.run(asyncio.wait_for(runner.run(), 30))
    assert rec.exits == [("7.1", 3, "")]
    assert any(
        "rank 1 failed first (exit code 3); the other ranks were stopped" in e.line
        for e in rec.logs
    ), [e.line for e in rec.logs]
    assert not runner.running


def test_killing_a_distributed_allocation_stops_every_rank(tmp_path: Path) -> None:
    script = "import os, time\nprint(os.getpid(), flush=True)\ntime.sleep(60)\n"
    runner, rec = make_runner(tmp_path, script, layout(local=3, world=3, first=0), slots=3)

    async def scenario() -> None:
        task = asyncio.create_task(runner.run())
        while len(rec.logs) < 3 or not rec.starts:
            await asyncio.sleep(0.02)
        await runner.kill()
        await asyncio.wait_for(task, 30)

    asyncio.run(scenario())
    ((alloc, code, reason),) = rec.exits
    assert (alloc, reason) == ("7.1", "killed")
    assert code is not None and code < 0
    for entry in rec.logs[:3]:
        pid = int(entry.line.split()[-1])
        assert not Path(f"/proc/{pid}").exists(), f"rank {entry.rank} outlived the kill"
    assert not runner.running


def test_a_garbled_layout_fails_the_allocation_with_the_reason(tmp_path: Path) -> None:
    bad = layout()
    del bad["master_port"]
    env, message = start_message(tmp_path, ECHO_RANK, bad)
    agent = Agent(agent_id="a1", master_url=env.master_url, slots=[], work_root=env.work_root)

    async def deliver() -> bool:
        await agent.processes.open(agent._report)
        return await agent.on_message(message)

    assert asyncio.run(deliver()) is True
    exit_report = agent.unacked_exits["7.1"]
    assert exit_report.exit_code == 1
    assert "master_port" in exit_report.reason
    assert agent.runners == {}
    # Its one line goes with the exit, to be stored in the exit's transaction.
    (line,) = exit_report.logs
    assert line.stream == "stderr" and "master_port" in line.line
    assert not agent.logs


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("node_rank", 2, "node_rank 2 is outside 0..1"),
        ("first_rank", 3, "does not fit a world of 4"),
        ("local_world_size", 0, "must be at least 1"),
        ("master_addr", "", "master_addr is empty"),
    ],
)
def test_a_layout_that_cannot_hold_is_refused(field: str, value: Any, problem: str) -> None:
    raw = {**layout(), field: value}
    with pytest.raises(InvalidRequest, match=problem):
        RankLayout.from_dict(raw)


def test_agent_offers_the_address_its_master_connection_comes_from(tmp_path: Path) -> None:
    def agent(address: str | None) -> Agent:
        return Agent(
            agent_id="a1",
            master_url="http://127.0.0.1:9",
            slots=[],
            work_root=tmp_path,
            address=address,
        )

    assert agent(None).hello("10.0.0.5").address == "10.0.0.5"
    assert agent("gpu-7.cluster").hello("10.0.0.5").address == "gpu-7.cluster"


def _names_busy(line: str, busy: int) -> bool:
    """The line names the busy port, and the one after it when another process holds that too
    (tests run in parallel)."""
    return (
        f"rendezvous port {busy} is already in use" in line
        or f"rendezvous ports {busy} and {busy + 1} are already in use" in line
    )


def test_a_busy_port_is_swapped_for_every_rank_when_all_ranks_are_on_this_agent(
    tmp_path: Path,
) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        busy = held.getsockname()[1]
        one_node = {**layout(local=2, first=0, world=2), "node_rank": 0, "num_nodes": 1}
        one_node.update(master_addr="127.0.0.1", master_port=busy, rendezvous_port=busy + 1)
        runner, rec = make_runner(tmp_path, ECHO_RANK, one_node)
        asyncio.run(asyncio.wait_for(runner.run(), 30))
    assert rec.exits == [("7.1", 0, "")]
    notes = [e.line for e in rec.logs if "already in use" in e.line]
    assert len(notes) == 1 and _names_busy(notes[0], busy)
    seen = [json.loads(e.line.split("] ", 1)[1]) for e in rec.logs if e.line.startswith("[rank=")]
    assert len(seen) == 2
    ports = {(env["MASTER_PORT"], env["ASSAY_RENDEZVOUS_PORT"]) for env in seen}
    assert len(ports) == 1, "every rank meets on the same ports"
    ((master, rendezvous),) = ports
    assert int(master) != busy and int(rendezvous) == int(master) + 1
    for env in seen:
        assert json.loads(env["ASSAY_RANK_LAYOUT"])["master_port"] == int(master)


def test_a_busy_port_fails_a_gang_of_several_agents_with_one_line_naming_it(
    tmp_path: Path,
) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        busy = held.getsockname()[1]
        chief = {**layout(local=1, first=0, world=2), "node_rank": 0, "num_nodes": 2}
        chief.update(master_port=busy, rendezvous_port=busy + 1)
        runner, rec = make_runner(tmp_path, ECHO_RANK, chief, slots=1)
        asyncio.run(asyncio.wait_for(runner.run(), 30))
    ((alloc_id, code, reason),) = rec.exits
    assert (alloc_id, code) == ("7.1", 1)
    assert _names_busy(reason, busy) and "\n" not in reason
    assert [e.line for e in rec.logs] == [reason], "nothing started"
    assert rec.starts == []
