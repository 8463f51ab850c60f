"""Only the cluster's agents join it, one process per agent id, and their trials die with them."""

from __future__ import annotations

import asyncio
import json
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from tests.integration.cluster import CONTEXTS, Cluster, serve, wait_for

pytestmark = pytest.mark.integration

LINGERING = yaml.safe_dump(
    {
        "name": "lingering",
        "entrypoint": "python3 train.py",
        "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 1}},
        "max_restarts": 0,
    }
)


@pytest.fixture
def made(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Cluster]:
    """A master given no agent token (it makes one), and an agent given the token in its
    environment (as `assay up` gives it), so a test can show the token is not its trials'."""
    c = Cluster(tmp_path / "home")
    c.env.pop("ASSAY_AGENT_TOKEN")
    c.start_master()
    c.start_agent("agent-1", slots=1, env={"ASSAY_AGENT_TOKEN": c.agent_token()})
    yield from serve(c, request)


def run_agent(
    cluster: Cluster, home: Path, *args: str, token: str | None = None
) -> subprocess.CompletedProcess[str]:
    """An agent process of its own home (no token file there), run until it exits."""
    env = {k: v for k, v in cluster.env.items() if k != "ASSAY_AGENT_TOKEN"}
    if token is not None:
        env["ASSAY_AGENT_TOKEN"] = token
    return subprocess.run(
        [sys.executable, "-m", "assay.agent", "--master", cluster.url, "--home", str(home), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def hello(cluster: Cluster, **fields: Any) -> list[dict[str, Any]]:
    """Every message the master sends a raw WebSocket that says hello with ``fields`` (until
    it closes the socket, or one second of silence after a welcome)."""

    async def talk() -> list[dict[str, Any]]:
        url = cluster.url.replace("http", "ws") + "/api/v1/agents/ws"
        got: list[dict[str, Any]] = []
        async with connect(url) as ws:
            await ws.send(json.dumps({"type": "hello", "slots": [], **fields}))
            try:
                while True:
                    got.append(json.loads(await asyncio.wait_for(ws.recv(), 1.0)))
            except (ConnectionClosed, TimeoutError):
                return got

    return asyncio.run(talk())


def trial_pids(cluster: Cluster, experiment_id: int) -> tuple[int, int, int]:
    """The trial's id and the pids of the lingering trial process and its helper."""
    trial_id = wait_for("the trial", lambda: cluster.client.trials(experiment_id))[0].id
    line = wait_for(
        "the trial to print its pids",
        lambda: next((x for x in cluster.trial_logs(trial_id) if x.startswith("pids ")), None),
    )
    _, trial, helper = line.split()
    return trial_id, int(trial), int(helper)


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead and not yet reaped, does not)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return False
    return fields[0] != "Z"


def refusal_reveals_nothing(message: str, cluster: Cluster) -> None:
    info = cluster.client.info()
    for secret in (info.cluster_id, "agent-1", "default", cluster.agent_token(), info.version):
        assert secret not in message, f"the refusal gives away {secret!r}: {message}"


def test_an_agent_without_the_token_is_refused_and_learns_nothing(
    cluster: Cluster, tmp_path: Path
) -> None:
    (answer,) = hello(cluster, agent_id="rogue")
    assert answer["type"] == "error", "the master answers a refusal, then closes the socket"
    assert "did not present this cluster's agent token" in answer["message"]
    refusal_reveals_nothing(answer["message"], cluster)

    agent = run_agent(cluster, tmp_path / "rogue-home", "--id", "rogue")
    assert agent.returncode == 1, "a refused agent stops instead of retrying"
    (line,) = agent.stderr.strip().splitlines()
    assert line.startswith("error: agent 'rogue' did not present this cluster's agent token")
    assert "--token" in line and "ASSAY_AGENT_TOKEN" in line
    # Where it looked, and where masters keep the token (`assay up`'s is not in its log).
    assert f"this agent had none (no --token, no $ASSAY_AGENT_TOKEN, nothing in {tmp_path}" in line
    assert "`assay up` keeps its cluster's in ASSAY_HOME/run/agent-token" in line
    refusal_reveals_nothing(agent.stderr + agent.stdout, cluster)
    assert [a.id for a in cluster.client.agents()] == ["agent-1"]
    assert stat.S_IMODE((tmp_path / "rogue-home").stat().st_mode) == 0o700, "the home it made"


def test_an_agent_with_a_wrong_token_is_refused_and_learns_nothing(
    cluster: Cluster, tmp_path: Path
) -> None:
    (answer,) = hello(cluster, agent_id="rogue", token="guessed")
    assert answer["type"] == "error"
    assert "a wrong agent token" in answer["message"]
    refusal_reveals_nothing(answer["message"], cluster)

    for how, source in ((["--token", "guessed"], "--token"), ([], "$ASSAY_AGENT_TOKEN")):
        agent = run_agent(cluster, tmp_path / "rogue-home", "--id", "rogue", *how, token="nope")
        assert agent.returncode == 1
        (line,) = agent.stderr.strip().splitlines()
        assert "did not present this cluster's agent token (a wrong agent token given)" in line
        assert f"this agent presented the one from {source}." in line
        refusal_reveals_nothing(line, cluster)
    assert [a.id for a in cluster.client.agents()] == ["agent-1"]


def test_assay_agent_takes_the_token_given_with_token(cluster: Cluster, tmp_path: Path) -> None:
    env = {k: v for k, v in cluster.env.items() if k != "ASSAY_AGENT_TOKEN"}
    env["ASSAY_HOME"] = str(tmp_path / "elsewhere")  # no token file there
    command = [sys.executable, "-c", "from assay.cli import main; main()", "agent"]
    command += ["--master", cluster.url, "--id", "by-cli", "--slots", "1"]
    agent = subprocess.Popen(
        [*command, "--token", cluster.agent_token()],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(
            "the agent given --token to connect",
            lambda: any(a.id == "by-cli" and a.connected for a in cluster.client.agents()),
        )
    finally:
        agent.terminate()
        agent.wait(timeout=30)


def test_assay_agent_given_the_masters_home_finds_the_token_there(
    made: Cluster, tmp_path: Path
) -> None:
    # What the master's log says: agents started with --home (its home) read the token it made.
    assert f"which agents started with --home {made.home} read" in made.log("master")
    env = {k: v for k, v in made.env.items() if k != "ASSAY_AGENT_TOKEN"}
    env["ASSAY_HOME"] = str(tmp_path / "elsewhere")
    command = [sys.executable, "-c", "from assay.cli import main; main()", "agent"]
    command += ["--master", made.url, "--id", "by-home", "--slots", "1", "--home", str(made.home)]
    agent = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(
            "the agent given the master's home to connect",
            lambda: any(a.id == "by-home" and a.connected for a in made.client.agents()),
        )
    finally:
        agent.terminate()
        agent.wait(timeout=30)


def test_the_made_agent_token_survives_a_restart_and_only_its_location_is_logged(
    made: Cluster,
) -> None:
    token = made.agent_token()
    assert len(token) >= 32
    made.kill_master(signal.SIGTERM)
    made.start_master()
    assert made.agent_token() == token, "the token is the cluster's, kept in its database"
    wait_for(
        "agent-1 (holding the first token) to reconnect",
        lambda: any(a.id == "agent-1" and a.connected for a in made.client.agents()),
    )
    master_log = made.log("master")
    assert str(made.home / "agent-token") in master_log
    assert token not in master_log


def test_masters_sharing_a_database_agree_on_the_agent_token(
    tmp_path: Path, pg_url: str, request: pytest.FixtureRequest
) -> None:
    first = Cluster(tmp_path / "first", db=pg_url)
    second = Cluster(tmp_path / "second", db=pg_url)
    for master in (first, second):
        master.env.pop("ASSAY_AGENT_TOKEN")
    try:
        first.start_master()
        second.start_master()
        assert first.agent_token() == second.agent_token()
        # An agent holding the token the first master made joins the second.
        second.start_agent("shared", slots=1, env={"ASSAY_AGENT_TOKEN": first.agent_token()})
    finally:
        second.stop()
        first.stop()


def test_the_database_and_the_agent_token_are_readable_by_their_owner_only(
    made: Cluster,
) -> None:
    made.submit(LINGERING, CONTEXTS / "lingering")  # so the database has been written
    files = ["assay.db", "assay.db-wal", "assay.db-shm", "agent-token"]
    modes = {name: stat.S_IMODE((made.home / name).stat().st_mode) for name in files}
    assert modes == dict.fromkeys(files, 0o600)


def test_a_second_agent_with_a_connected_agents_id_is_refused_and_the_first_keeps_its_trial(
    made: Cluster, tmp_path: Path
) -> None:
    exp_id = made.submit(LINGERING, CONTEXTS / "lingering")
    trial_id, trial_pid, _ = trial_pids(made, exp_id)

    clone = run_agent(made, tmp_path / "clone-home", "--id", "agent-1", token=made.agent_token())
    assert clone.returncode == 1
    (line,) = clone.stderr.strip().splitlines()
    assert "an agent with id 'agent-1' is connected already" in line and "--id" in line

    assert made.agents["agent-1"].poll() is None, "the first agent still runs"
    assert alive(trial_pid), "and so does its trial"
    trial = made.client.trial(trial_id)
    assert (trial.state, trial.restarts) == ("RUNNING", 0)
    (agent,) = made.client.agents()
    assert agent.connected and [s.allocated for s in agent.slots] == [True]
    made.client.transition(exp_id, "kill")


def test_the_same_agent_process_reconnecting_is_taken_and_another_is_refused(
    cluster: Cluster,
) -> None:
    async def scenario() -> tuple[str, str, dict[str, Any]]:
        url = cluster.url.replace("http", "ws") + "/api/v1/agents/ws"
        token = cluster.agent_token()

        def hello(session: str) -> str:
            fields = {"type": "hello", "agent_id": "twin", "token": token, "session": session}
            return json.dumps({**fields, "slots": [{"id": "0"}]})

        async with connect(url) as first:
            await first.send(hello("one"))
            welcome = json.loads(await first.recv())["type"]
            # The first connection still looks alive to the master: a reconnect of the same
            # process (its session) takes over, another process with the id is refused.
            async with connect(url) as again:
                await again.send(hello("one"))
                rewelcome = json.loads(await again.recv())["type"]
                async with connect(url) as other:
                    await other.send(hello("two"))
                    refusal = json.loads(await other.recv())
        return welcome, rewelcome, refusal

    welcome, rewelcome, refusal = asyncio.run(scenario())
    assert (welcome, rewelcome) == ("welcome", "welcome")
    assert refusal["type"] == "error"
    assert "an agent with id 'twin' is connected already" in refusal["message"]


def test_an_agent_killed_by_sigkill_takes_its_trial_processes_with_it_within_a_second(
    made: Cluster,
) -> None:
    exp_id = made.submit(LINGERING, CONTEXTS / "lingering")
    _, trial_pid, helper_pid = trial_pids(made, exp_id)
    environ = Path(f"/proc/{trial_pid}/environ").read_bytes()
    assert made.agent_token().encode() not in environ, "the agent's token is not the trial's"
    assert b"ASSAY_AGENT_TOKEN=" not in environ
    assert alive(trial_pid) and alive(helper_pid)

    agent = made.agents["agent-1"]
    agent.send_signal(signal.SIGKILL)
    agent.wait()
    deadline = time.monotonic() + 1.0
    while (alive(trial_pid) or alive(helper_pid)) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not alive(trial_pid), "the trial process outlived its agent by a second"
    assert not alive(helper_pid), "a process the trial started outlived its agent by a second"
