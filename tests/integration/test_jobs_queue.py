"""OpenPAI jobs in the queue as a new user meets them, on a real master and agent: jobs the
pool could never hold together are refused, waiting ones say why, every id a user types names
its job, following can be left with Ctrl-C, and OpenPAI's REST v2 list and config."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from assay import rest
from assay.errors import InvalidConfig
from tests.integration.cluster import ROOT, Cluster, serve, wait_for

pytestmark = pytest.mark.integration


@pytest.fixture
def cluster(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Cluster]:
    c = Cluster(tmp_path / "home")
    c.start_master()
    c.start_agent("agent-1", slots=2, extra=("--cpu", "8", "--memory-mb", "16384"))
    yield from serve(c, request)


def _job(name: str, *, instances: int = 1, gpu: int = 0, cpu: float = 0, **more: Any) -> str:
    spec = {
        "protocolVersion": 2,
        "name": name,
        "type": "job",
        "prerequisites": [{"name": "image", "type": "dockerimage", "uri": "python:3.11"}],
        "taskRoles": {
            "worker": {
                "dockerImage": "image",
                "instances": instances,
                "resourcePerInstance": {"cpu": cpu, "memoryMB": 16, "gpu": gpu},
                "commands": ["sleep 300"],
                **more,
            }
        },
    }
    return json.dumps(spec)


def _wait_ended(cluster: Cluster, task_id: int, timeout: float = 60) -> rest.Task:
    return wait_for(
        f"job {task_id} to end",
        lambda: (t := cluster.client.task(task_id)).ended_at is not None and t,
        timeout=timeout,
    )


def test_a_job_bigger_than_the_pool_in_all_is_refused_naming_its_instances(
    cluster: Cluster, tmp_path: Path
) -> None:
    with pytest.raises(InvalidConfig) as err:
        cluster.client.submit_job(_job("greedy", instances=3, cpu=8))
    (detail,) = err.value.details
    assert detail.path == "taskRoles.worker.instances"
    assert "needs 24 cpus in all, the pool's agents have 8" in detail.message
    job_file = tmp_path / "greedy.json"
    job_file.write_text(_job("greedy", instances=3, gpu=1))
    refused = cluster.cli("job", "submit", str(job_file))
    assert refused.returncode == 1
    (line,) = refused.stderr.strip().splitlines()
    assert "taskRoles.worker.instances" in line and "needs 3 slots in all" in line
    assert "agents have 2" in line
    assert cluster.client.tasks() == []


def test_a_job_that_fits_in_all_but_waits_says_why_in_the_list(cluster: Cluster) -> None:
    first = cluster.client.submit_job(_job("holder", instances=2, gpu=1))
    wait_for(
        "the holder to run",
        lambda: all(i.state == "RUNNING" for i in cluster.client.task(first.id).instances),
    )
    second = cluster.client.submit_job(_job("waiter", gpu=1))
    (row,) = [j for j in cluster.client.jobs().jobs if j.task_id == second.id]
    assert row.status == "QUEUED"
    assert row.waiting == "needs 1 slot; 0 of the pool's 2 are free"
    (held,) = [j for j in cluster.client.jobs().jobs if j.task_id == first.id]
    assert held.waiting is None
    listed = cluster.cli("job", "list", check=True).stdout
    assert "Why it waits" in listed and "needs 1 slot; 0 of the pool's 2 are free" in listed
    cluster.client.stop_task(second.id)
    cluster.client.stop_task(first.id)
    _wait_ended(cluster, first.id)


def test_every_id_form_names_the_job_in_update_ahead_of_and_update_batch(
    cluster: Cluster,
) -> None:
    holder = cluster.client.submit_job(_job("holder", instances=2, gpu=1))
    first = cluster.client.submit_job(_job("first", gpu=1))
    second = cluster.client.submit_job(_job("second", gpu=1))
    cluster.cli("job", "update", "admin~first", "--priority", "30", check=True)
    assert cluster.client.task(first.id).priority == 30
    cluster.cli("job", "update", f"job-{second.id}", "--priority", "40", check=True)
    assert cluster.client.task(second.id).priority == 40
    cluster.cli("job", "update", str(second.id), "--ahead-of", "admin~first", check=True)

    def order() -> list[int | None]:
        return [j.task_id for j in cluster.client.jobs().jobs]

    assert order().index(second.id) < order().index(first.id)
    cluster.cli(
        "job", "update-batch", f"job-{first.id}.priority=5", "admin~second.priority=6", check=True
    )
    assert cluster.client.task(first.id).priority == 5
    assert cluster.client.task(second.id).priority == 6
    listed = cluster.cli("job", "list", check=True).stdout
    header = listed.splitlines()[0].split()
    assert header[:3] == ["#", "Job", "ID"]
    rows = {line.split()[1]: line for line in listed.splitlines()[1:] if line.strip()}
    assert {str(holder.id), str(first.id), str(second.id)} <= set(rows)
    bad = cluster.cli("job", "update", "nobody~nothing", "--priority", "3")
    assert bad.returncode == 1 and "no job is named nobody~nothing" in bad.stderr
    malformed = cluster.cli("job", "update", "trial-3", "--priority", "3")
    assert malformed.returncode == 1 and "user~name" in malformed.stderr
    for task in (second, first, holder):
        cluster.client.stop_task(task.id)
    _wait_ended(cluster, holder.id)


def _interrupted(cluster: Cluster, *args: str) -> tuple[int, str, str]:
    """Run ``assay *args``, wait for the job it starts to run, press Ctrl-C; its exit status
    and output."""
    import signal
    import subprocess
    import sys
    import time

    before = {t.id for t in cluster.client.tasks()}
    proc = subprocess.Popen(
        [sys.executable, "-c", "from assay.cli import main; main()", *args],
        env={**cluster.env, "COLUMNS": "160"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        wait_for(
            "the job to run",
            lambda: any(
                t.id not in before and t.running for t in cluster.client.tasks(active=True)
            ),
            timeout=60,
        )
        time.sleep(1.0)  # into the follow's read
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, out, err


def test_ctrl_c_while_following_detaches_and_leaves_the_job_running(
    cluster: Cluster, tmp_path: Path
) -> None:
    job_file = tmp_path / "long.json"
    job_file.write_text(_job("long"))
    code, out, err = _interrupted(cluster, "job", "submit", str(job_file), "--follow")
    (task,) = cluster.client.tasks()
    assert code == 130, out + err
    assert f"detached; job {task.id} keeps running (assay job logs {task.id} -f re-attaches" in out
    assert f"assay job stop {task.id} stops it" in out
    assert "Traceback" not in out + err and "Aborted" not in out + err
    assert cluster.client.task(task.id).state == "RUNNING"
    code, out, err = _interrupted(cluster, "cmd", "run", "--", "sleep", "300")
    assert code == 130 and "detached; job" in out and "Traceback" not in err
    (command,) = [t for t in cluster.client.tasks() if t.kind == "command"]
    assert cluster.client.task(command.id).state == "RUNNING"
    for t in (task, command):
        cluster.client.stop_task(t.id)
        _wait_ended(cluster, t.id)


def test_cmd_run_with_only_a_config_file_runs_its_entrypoint(
    cluster: Cluster, tmp_path: Path
) -> None:
    config = tmp_path / "command.yaml"
    config.write_text("entrypoint: echo from the entrypoint\nresources:\n  slots: 0\n")
    ran = cluster.cli("cmd", "run", "--config-file", str(config))
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "from the entrypoint" in ran.stdout
    empty = tmp_path / "empty.yaml"
    empty.write_text("resources:\n  slots: 0\n")
    refused = cluster.cli("cmd", "run", "--config-file", str(empty))
    assert refused.returncode == 1
    (line,) = refused.stderr.strip().splitlines()
    assert "has no entrypoint" in line and "assay cmd run --" in line


def test_rest_v2_lists_only_openpai_jobs_filters_and_gives_the_config_masked(
    cluster: Cluster,
) -> None:
    import httpx

    job = json.loads(_job("listed"))
    job["secrets"] = {"token": "tok-very-secret-42"}
    job["taskRoles"]["worker"]["commands"] = ["echo <% $secrets.token %>"]
    cluster.client.submit_job(json.dumps(job))
    ran = cluster.cli("cmd", "run", "--config", "resources.slots=0", "--", "true")
    assert ran.returncode == 0, ran.stderr
    with httpx.Client(base_url=cluster.url, headers=cluster.auth_headers(), timeout=30) as http:
        listed = http.get("/api/v2/jobs").json()
        assert [j["name"] for j in listed] == ["listed"]  # not the command
        assert [j["name"] for j in http.get("/api/v2/jobs?username=admin").json()] == ["listed"]
        assert http.get("/api/v2/jobs?username=nobody").json() == []
        assert http.get("/api/v2/jobs?vc=nosuch").json() == []
        wait_for(
            "the job to succeed",
            lambda: http.get("/api/v2/jobs?state=SUCCEEDED").json() != [],
        )
        assert http.get("/api/v2/jobs?state=RUNNING").json() == []
        unknown = http.get("/api/v2/jobs?user=admin")
        assert unknown.status_code == 400 and "'user'" in unknown.json()["message"]
        assert unknown.json()["code"] == "InvalidParametersError"
        assert "'user'" in unknown.json()["error"]["message"]
        for path in ("/api/v2/jobs/no-tilde", "/api/v2/jobs/a~b/nothing/here"):
            bad = http.get(path)
            assert bad.status_code == 404, (path, bad.text)
            assert bad.headers["content-type"].startswith("application/json")
            assert bad.json()["message"]
        config = http.get("/api/v2/jobs/admin~listed/config")
        assert config.status_code == 200, config.text
        assert config.headers["content-type"].startswith("text/yaml")
        assert "tok-very-secret-42" not in config.text
        import yaml

        written = yaml.safe_load(config.text)
        assert written["name"] == "listed" and written["secrets"] == {"token": "******"}
        assert written["taskRoles"]["worker"]["commands"] == ["echo <% $secrets.token %>"]
        assert http.get("/api/v2/jobs/admin~nope/config").status_code == 404
