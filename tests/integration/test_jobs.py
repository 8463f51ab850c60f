"""OpenPAI jobs, commands and generic tasks on a real master and agent: gang placement, the
PAI_* variables, completion policy, retries, stop, and refusals at submission."""

from __future__ import annotations

import json
import os
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from assay import rest
from assay.context import pack_context
from assay.errors import InvalidConfig
from tests.corpus import compat_dir
from tests.integration.cluster import CONTEXTS, Cluster, serve, wait_for

pytestmark = pytest.mark.integration

SEED_JSON = {
    "jobName": "tensorflow-cifar10",
    "image": "tensorflow/tensorflow:1.12.0-gpu-py3",
    "taskRoles": [
        {
            "name": "default",
            "taskNumber": 1,
            "cpuNumber": 4,
            "memoryMB": 8192,
            "gpuNumber": 1,
            "command": "echo hello from the seed && python3 -c 'print(6 * 7)'",
        }
    ],
}


@pytest.fixture
def cluster(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Cluster]:
    c = Cluster(tmp_path / "home")
    c.start_master()
    # The seed asks for 4 cores and 8 GiB: this agent offers them whatever the machine has.
    c.start_agent("agent-1", slots=2, extra=("--cpu", "8", "--memory-mb", "16384"))
    yield from serve(c, request)


def _wait_ended(cluster: Cluster, task_id: int, timeout: float = 120) -> rest.Task:
    return wait_for(
        f"job {task_id} to end",
        lambda: (
            (t := cluster.client.task(task_id)).ended_at is not None
            and not any(i.state == "RUNNING" for i in t.instances)
            and t
        ),
        timeout=timeout,
    )


def _lines(cluster: Cluster, task_id: int, **kwargs: object) -> list[str]:
    return [e.line for e in cluster.client.task_logs(task_id, **kwargs)]  # type: ignore[arg-type]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie has ended; only its parent has not read its status yet.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def test_seed_hello_world_json_runs_to_succeeded_with_its_output_in_the_log(
    cluster: Cluster,
) -> None:
    task = cluster.client.submit_job(json.dumps(SEED_JSON))
    assert task.type == "JOB" and task.image == "tensorflow/tensorflow:1.12.0-gpu-py3"
    done = _wait_ended(cluster, task.id)
    assert done.state == "SUCCEEDED", done.message
    assert done.exit_code == 0
    lines = _lines(cluster, task.id)
    assert "hello from the seed" in lines and "42" in lines
    said = [line for line in lines if "no container runtime is configured" in line]
    assert len(said) == 1 and "tensorflow/tensorflow:1.12.0-gpu-py3" in said[0]
    (inst,) = done.instances
    assert inst.state == "SUCCEEDED" and inst.exit_code == 0 and inst.host and inst.agent_id


ROLES_YAML = textwrap.dedent(
    """
    protocolVersion: 2
    name: ps_and_workers
    type: job
    prerequisites:
      - {name: image, type: dockerimage, uri: python:3.11}
    taskRoles:
      ps:
        instances: 1
        completion: {minSucceededInstances: -1}
        dockerImage: image
        resourcePerInstance: {cpu: 1, memoryMB: 256, gpu: 0, ports: {ps: 1}}
        commands:
          - python3 ps.py
      worker:
        instances: 20
        dockerImage: image
        resourcePerInstance: {cpu: 0, memoryMB: 64, gpu: 0}
        commands:
          - python3 worker.py
    """
)


def test_two_roles_find_each_other_through_pai_variables(cluster: Cluster) -> None:
    context = pack_context(CONTEXTS / "pai_rendezvous").data
    task = cluster.client.submit_job(ROLES_YAML, context=context)
    done = _wait_ended(cluster, task.id, timeout=240)
    assert done.state == "SUCCEEDED", (done.message, [i.message for i in done.instances])
    workers = [i for i in done.instances if i.role == "worker"]
    assert sorted(i.index for i in workers) == list(range(20))
    assert all(i.state == "SUCCEEDED" for i in done.instances)
    (ps,) = [i for i in done.instances if i.role == "ps"]
    port = ps.ports["ps"][0]
    assert port >= 1024
    ps_lines = _lines(cluster, task.id, role="ps")
    assert f"ps heard workers {list(range(20))}" in ps_lines
    for index in (0, 7, 19):
        mine = _lines(cluster, task.id, role="worker", index=index)
        assert (
            f"worker {index} of 20 (task index {index}, roles ps,worker, job ps_and_workers "
            f"of admin) -> {ps.host}:{port}"
        ) in mine
        assert f"worker {index} got ok" in mine


def _sleeper_job(name: str, pid_dir: Path, **role: object) -> str:
    spec = {
        "protocolVersion": 2,
        "name": name,
        "type": "job",
        "parameters": {"dir": str(pid_dir)},
        "prerequisites": [{"name": "image", "type": "dockerimage", "uri": "python:3.11"}],
        "taskRoles": {
            "main": {
                "dockerImage": "image",
                "instances": 3,
                "resourcePerInstance": {"cpu": 0, "memoryMB": 16, "gpu": 0},
                "commands": [
                    "if [ $PAI_TASK_INDEX = 0 ]; then echo quick; exit 0; fi",
                    "sleep 300 & echo $! > <% $parameters.dir %>/$PAI_TASK_INDEX.pid; wait",
                ],
                **role,
            }
        },
    }
    return json.dumps(spec)


def test_min_succeeded_one_ends_the_job_at_the_first_success_and_stops_the_rest(
    cluster: Cluster, tmp_path: Path
) -> None:
    job = _sleeper_job("first_wins", tmp_path, completion={"minSucceededInstances": 1})
    task = cluster.client.submit_job(job)
    done = _wait_ended(cluster, task.id)
    assert done.state == "SUCCEEDED", done.message
    states = {i.index: i.state for i in done.instances}
    assert states[0] == "SUCCEEDED"
    assert {states[1], states[2]} <= {"STOPPED"}
    for pid_file in tmp_path.glob("*.pid"):
        pid = int(pid_file.read_text())
        wait_for(f"sleep {pid} to be gone", lambda p=pid: not _alive(p), timeout=20)


def test_failing_command_is_retried_task_retry_count_times_then_fails(cluster: Cluster) -> None:
    spec = {
        "protocolVersion": 2,
        "name": "flaky",
        "type": "job",
        "prerequisites": [{"name": "image", "type": "dockerimage", "uri": "python:3.11"}],
        "taskRoles": {
            "main": {
                "dockerImage": "image",
                "instances": 1,
                "taskRetryCount": 2,
                "resourcePerInstance": {"cpu": 1, "memoryMB": 16, "gpu": 0},
                "commands": ["echo attempt", "exit 3", "echo never"],
            }
        },
    }
    task = cluster.client.submit_job(json.dumps(spec))
    done = _wait_ended(cluster, task.id)
    assert done.state == "FAILED"
    assert done.exit_code == 3
    (inst,) = done.instances
    assert inst.state == "FAILED" and inst.runs == 3 and inst.retries == 2
    lines = _lines(cluster, task.id)
    assert lines.count("attempt") == 3 and "never" not in lines


def test_stop_ends_the_job_stopped_with_its_processes_gone(
    cluster: Cluster, tmp_path: Path
) -> None:
    task = cluster.client.submit_job(_sleeper_job("to_stop", tmp_path, instances=2))
    wait_for("the sleeper's pid file", lambda: len(list(tmp_path.glob("*.pid"))) == 1, timeout=60)
    queue = cluster.client.jobs()
    assert [(j.type, j.name) for j in queue.jobs if j.task_id == task.id] == [("JOB", "to_stop")]
    listed = cluster.cli("job", "list", check=True).stdout
    assert "JOB" in listed and "to_stop" in listed
    result = cluster.cli("job", "stop", str(task.id), check=True)
    assert "STOPP" in result.stdout
    done = _wait_ended(cluster, task.id)
    assert done.state == "STOPPED"
    for pid_file in tmp_path.glob("*.pid"):
        pid = int(pid_file.read_text())
        wait_for(f"sleep {pid} to be gone", lambda p=pid: not _alive(p), timeout=20)


def test_job_no_agent_could_hold_is_refused_at_submission_naming_role_and_resource(
    cluster: Cluster,
) -> None:
    spec = dict(SEED_JSON)
    spec["taskRoles"] = [dict(SEED_JSON["taskRoles"][0], memoryMB=10_000_000)]  # type: ignore[index]
    with pytest.raises(InvalidConfig) as err:
        cluster.client.submit_job(json.dumps(spec))
    text = str(err.value) + " ".join(d.message for d in err.value.details)
    assert "default" in text and "memory" in text
    assert cluster.client.tasks() == []


def test_generic_task_from_determined_examples_runs(cluster: Cluster, tmp_path: Path) -> None:
    config = compat_dir() / "determined" / "tasks" / "e2e__generic_task__test_config.yaml"
    if not config.exists():
        pytest.skip("the compat corpus is not here")
    (tmp_path / "ctx").mkdir()
    (tmp_path / "ctx" / "README").write_text("context of a generic task\n")
    result = cluster.cli("task", "create", str(config), str(tmp_path / "ctx"), "--follow")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "task ran" in result.stdout
    assert "SUCCEEDED" in result.stdout
    listing = cluster.cli("task", "list", "--all", "--json", check=True)
    assert any(row["type"] == "GENERIC" for row in json.loads(listing.stdout))


def test_cmd_run_follows_a_zero_slot_command_to_its_end(cluster: Cluster) -> None:
    result = cluster.cli(
        "cmd", "run", "--config", "resources.slots=0", "--", "sh", "-c", "echo hi from cmd"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "hi from cmd" in result.stdout
    failed = cluster.cli("cmd", "run", "--", "sh", "-c", "exit 4")
    assert failed.returncode == 1
    assert "FAILED" in failed.stdout and "exit code 4" in failed.stdout


SECRET_JOB = textwrap.dedent(
    """
    protocolVersion: 2
    name: with_secret
    type: job
    prerequisites:
      - {name: image, type: dockerimage, uri: python:3.11}
    parameters: {greeting: hello}
    secrets: {token: tok-3xq9-very-secret}
    taskRoles:
      main:
        dockerImage: image
        resourcePerInstance: {cpu: 1, memoryMB: 64, gpu: 0}
        commands:
          - echo "<% $parameters.greeting %> with <% $secrets.token %>"
          - python3 -c 'print(len("<% $secrets.token %>"))'
    """
)


def test_openpai_rest_v2_submit_list_get_stop_round_trip(cluster: Cluster) -> None:
    import httpx

    yaml_body = {"Content-Type": "text/yaml"}
    with httpx.Client(base_url=cluster.url, headers=cluster.auth_headers(), timeout=30) as http:
        submitted = http.post("/api/v2/jobs", content=SECRET_JOB, headers=yaml_body)
        assert submitted.status_code == 202, submitted.text
        assert submitted.json() == {
            "status": 202,
            "message": "Update job with_secret for user admin successfully.",
        }
        again = http.post("/api/v2/jobs", content=SECRET_JOB, headers=yaml_body)
        assert again.status_code == 409 and again.json()["code"] == "ConflictJobError"

        wait_for(
            "the job to succeed",
            lambda: (
                http.get("/api/v2/jobs/admin~with_secret").json()["jobStatus"]["state"]
                == "SUCCEEDED"
            ),
        )
        listed = http.get("/api/v2/jobs").json()
        assert [j["name"] for j in listed] == ["with_secret"]
        item = listed[0]
        assert item["username"] == "admin" and item["state"] == "SUCCEEDED"
        assert item["totalTaskNumber"] == 1 and item["totalTaskRoleNumber"] == 1
        assert item["appExitCode"] == 0 and isinstance(item["createdTime"], int)
        detail = http.get("/api/v2/jobs/admin~with_secret").json()
        (status,) = detail["taskRoles"]["main"]["taskStatuses"]
        assert status["taskIndex"] == 0 and status["taskState"] == "SUCCEEDED"
        assert status["containerExitCode"] == 0 and status["containerIp"]
        missing = http.get("/api/v2/jobs/admin~nope")
        assert missing.status_code == 404 and missing.json()["code"] == "NoJobError"
        bad = http.post("/api/v2/jobs", content="protocolVersion: 2\nname: x\n", headers=yaml_body)
        assert bad.status_code == 400 and bad.json()["code"] == "BadConfigurationError"

        sleeper = SECRET_JOB.replace("with_secret", "sleeper").replace(
            'echo "<% $parameters.greeting %> with <% $secrets.token %>"', "sleep 300"
        )
        assert http.post("/api/v2/jobs", content=sleeper, headers=yaml_body).status_code == 202
        wait_for(
            "the sleeper to run",
            lambda: (
                http.get("/api/v2/jobs/admin~sleeper").json()["jobStatus"]["state"] == "RUNNING"
            ),
        )
        stop = http.put("/api/v2/jobs/admin~sleeper/executionType", json={"value": "STOP"})
        assert stop.status_code == 202, stop.text
        wait_for(
            "the sleeper to stop",
            lambda: (
                http.get("/api/v2/jobs/admin~sleeper").json()["jobStatus"]["state"] == "STOPPED"
            ),
        )
        stopped = http.get("/api/v2/jobs/admin~sleeper").json()["jobStatus"]
        assert stopped["executionType"] == "STOP"

    # The secret reached the commands, and no answer or stored line shows it.
    (task,) = [t for t in cluster.client.tasks() if t.name == "with_secret"]
    lines = _lines(cluster, task.id)
    assert "hello with ********" in lines and str(len("tok-3xq9-very-secret")) in lines
    shown = cluster.client.task(task.id).model_dump_json()
    assert "tok-3xq9-very-secret" not in shown and "token" in shown
    described = cluster.cli("job", "describe", str(task.id), check=True).stdout
    assert "tok-3xq9-very-secret" not in described


def test_job_retry_count_runs_the_whole_job_again_then_fails(cluster: Cluster) -> None:
    spec = {
        "protocolVersion": 2,
        "name": "retried",
        "type": "job",
        "jobRetryCount": 1,
        "prerequisites": [{"name": "image", "type": "dockerimage", "uri": "python:3.11"}],
        "taskRoles": {
            "main": {
                "dockerImage": "image",
                "instances": 1,
                "resourcePerInstance": {"cpu": 0, "memoryMB": 16, "gpu": 0},
                "commands": ["echo run of $PAI_TASK_INDEX", "exit 5"],
            }
        },
    }
    task = cluster.client.submit_job(json.dumps(spec))
    done = _wait_ended(cluster, task.id)
    assert done.state == "FAILED" and done.attempt == 1
    assert done.exit_code == 5
    (inst,) = done.instances
    assert inst.runs == 2 and inst.retries == 0
    assert _lines(cluster, task.id).count("run of 0") == 2


def test_a_queued_job_is_reprioritised_like_any_job(cluster: Cluster, tmp_path: Path) -> None:
    task = cluster.client.submit_job(_sleeper_job("reprioritised", tmp_path, instances=2))
    result = cluster.cli("job", "update", task.job_id, "--priority", "7", check=True)
    assert "updated" in result.stdout
    (row,) = [j for j in cluster.client.jobs().jobs if j.task_id == task.id]
    assert row.priority == 7 and row.type == "JOB"
    assert cluster.client.task(task.id).priority == 7
    cluster.client.stop_task(task.id)
    assert _wait_ended(cluster, task.id).state == "STOPPED"
