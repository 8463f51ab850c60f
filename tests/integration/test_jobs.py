"""OpenPAI jobs, commands and generic tasks on a real master and agent: gang placement, the
PAI_* variables, completion policy, retries, stop, and refusals at submission."""

from __future__ import annotations

import concurrent.futures
import json
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from assay import rest
from assay.context import pack_context
from assay.errors import InvalidConfig
from tests.corpus import compat_dir
from tests.integration.cluster import CONTEXTS, Cluster, serve, wait_for
from tests.processes import alive

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
    assert done.state == "SUCCEEDED", (
        done.message,
        [i.message for i in done.instances],
        _lines(cluster, task.id, role="ps"),
    )
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
    pid = "<% $parameters.dir %>/$PAI_TASK_INDEX"
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
                    # Written whole or not at all: a stopped instance leaves no empty file.
                    f"sleep 300 & echo $! > {pid}.tmp && mv {pid}.tmp {pid}.pid; wait",
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
        wait_for(f"sleep {pid} to be gone", lambda p=pid: not alive(p), timeout=20)


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
    # Between runs, the log says a new one starts, and why.
    said = [line for line in lines if line.startswith("assay master: main/0")]
    assert said == [
        "assay master: main/0: attempt 2 of 3 starting after exit code 3",
        "assay master: main/0: attempt 3 of 3 starting after exit code 3",
    ]


def test_stop_ends_the_job_stopped_with_its_processes_gone(
    cluster: Cluster, tmp_path: Path
) -> None:
    task = cluster.client.submit_job(_sleeper_job("to_stop", tmp_path, instances=2))
    wait_for("the sleeper's pid file", lambda: len(list(tmp_path.glob("*.pid"))) == 1, timeout=60)
    queue = cluster.client.jobs()
    # Zero slots, running: RUNNING, not QUEUED (nothing waits) nor SCHEDULED.
    assert [(j.type, j.name, j.status) for j in queue.jobs if j.task_id == task.id] == [
        ("JOB", "to_stop", "RUNNING")
    ]
    listed = cluster.cli("job", "list", check=True).stdout
    assert "JOB" in listed and "to_stop" in listed and "RUNNING" in listed
    result = cluster.cli("job", "stop", str(task.id), check=True)
    assert "STOPP" in result.stdout
    done = _wait_ended(cluster, task.id)
    assert done.state == "STOPPED"
    for pid_file in tmp_path.glob("*.pid"):
        pid = int(pid_file.read_text())
        wait_for(f"sleep {pid} to be gone", lambda p=pid: not alive(p), timeout=20)


def test_job_no_agent_could_hold_is_refused_at_submission_naming_role_and_resource(
    cluster: Cluster,
) -> None:
    spec = dict(SEED_JSON)
    spec["taskRoles"] = [dict(SEED_JSON["taskRoles"][0], memoryMB=10_000_000)]  # type: ignore[index]
    with pytest.raises(InvalidConfig) as err:
        cluster.client.submit_job(json.dumps(spec))
    (detail,) = err.value.details
    # The user's own key path and number, as the v1 file writes them.
    assert detail.path == "taskRoles[0].memoryMB"
    assert "task role default" in detail.message and "10000000 MB" in detail.message
    assert "e+" not in detail.message
    v2 = json.loads(_sleeper_job("too_big", Path("/nonexistent"), instances=1))
    v2["taskRoles"]["main"]["resourcePerInstance"]["gpu"] = 5
    with pytest.raises(InvalidConfig) as err:
        cluster.client.submit_job(json.dumps(v2))
    assert [d.path for d in err.value.details] == ["taskRoles.main.resourcePerInstance.gpu"]
    v2["defaults"] = {"virtualCluster": "nosuch"}
    with pytest.raises(InvalidConfig) as err:
        cluster.client.submit_job(json.dumps(v2))
    assert [d.path for d in err.value.details] == ["defaults.virtualCluster"]
    refused = cluster.cli("cmd", "run", "--config", "resources.slots=5", "--", "true")
    assert refused.returncode == 1
    (line,) = refused.stderr.strip().splitlines()
    assert "resources.slots: the command can never be placed" in line and "roles." not in line
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
    (row,) = [row for row in json.loads(listing.stdout) if row["type"] == "GENERIC"]
    # The same id as `assay job describe --json` gives, and the table shows.
    described = json.loads(cluster.cli("job", "describe", str(row["id"]), "--json").stdout)
    assert row["id"] == described["id"] and isinstance(row["id"], int)
    assert described["attempt"] == 0
    shown = cluster.cli("job", "describe", str(row["id"]), check=True).stdout
    assert "job retries 0 of 0" in shown


def test_cmd_run_follows_a_zero_slot_command_to_its_end_and_exits_with_its_code(
    cluster: Cluster,
) -> None:
    result = cluster.cli(
        "cmd", "run", "--config", "resources.slots=0", "--", "sh", "-c", "echo hi from cmd"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "hi from cmd" in result.stdout
    failed = cluster.cli("cmd", "run", "--", "sh", "-c", "exit 4")
    assert failed.returncode == 4
    assert "FAILED" in failed.stdout and "exit code 4" in failed.stdout


def test_following_ends_promptly_when_the_job_ends(cluster: Cluster) -> None:
    # The follow used to end only at the next 15 s keep-alive after the last line.
    started = time.monotonic()
    result = cluster.cli(
        "cmd", "run", "--config", "resources.slots=0", "--", "sh", "-c", "echo x; sleep 2"
    )
    took = time.monotonic() - started
    assert result.returncode == 0, result.stdout + result.stderr
    assert took < 10, f"cmd run took {took:.1f}s"
    task = cluster.client.submit_job(json.dumps(SEED_JSON))
    _wait_ended(cluster, task.id)
    started = time.monotonic()
    followed = cluster.cli("job", "logs", "-f", str(task.id), check=True)
    assert "hello from the seed" in followed.stdout
    assert time.monotonic() - started < 8


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
        too_big = SECRET_JOB.replace("gpu: 0", "gpu: 5").replace("with_secret", "too_big")
        refused = http.post("/api/v2/jobs", content=too_big, headers=yaml_body).json()
        # Each problem once in the message OpenPAI's clients show.
        assert refused["message"].count("can never be placed") == 1, refused["message"]

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
    # Protocol v2 names the image per role; the job's is theirs when they agree.
    assert cluster.client.task(task.id).image == "python:3.11"
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
    lines = _lines(cluster, task.id)
    assert lines.count("run of 0") == 2
    assert "assay master: job attempt 2 of 2 starting after exit code 5" in lines


def test_a_queued_job_is_reprioritised_like_any_job(cluster: Cluster, tmp_path: Path) -> None:
    task = cluster.client.submit_job(_sleeper_job("reprioritised", tmp_path, instances=2))
    result = cluster.cli("job", "update", task.job_id, "--priority", "7", check=True)
    assert "updated" in result.stdout
    (row,) = [j for j in cluster.client.jobs().jobs if j.task_id == task.id]
    assert row.priority == 7 and row.type == "JOB"
    assert cluster.client.task(task.id).priority == 7
    # The queue id `assay job list` shows and the number `assay task list` shows name one job.
    cluster.cli("job", "update", str(task.id), "--priority", "9", check=True)
    assert cluster.client.task(task.id).priority == 9
    by_queue_id = cluster.cli("job", "describe", task.job_id, check=True).stdout
    by_number = cluster.cli("job", "describe", str(task.id), check=True).stdout
    assert f"job {task.id} (queue id {task.job_id}): reprioritised" in by_queue_id
    assert by_queue_id.splitlines()[0] == by_number.splitlines()[0]
    nosuch = cluster.cli("job", "logs", str(task.id), "--role", "nosuch")
    assert nosuch.returncode == 1
    assert "has no role 'nosuch'; its roles are: main" in nosuch.stderr
    beyond = cluster.cli("job", "logs", str(task.id), "--role", "main", "--index", "5")
    assert beyond.returncode == 1 and "its instances are 0 to 1" in beyond.stderr
    missing = cluster.cli("job", "describe", "0badf00d")
    assert missing.returncode == 1 and "no job has the id 0badf00d" in missing.stderr
    cluster.cli("job", "stop", task.job_id, check=True)
    assert _wait_ended(cluster, task.id).state == "STOPPED"


def test_a_job_name_names_one_job_for_good_as_on_openpai(cluster: Cluster, tmp_path: Path) -> None:
    import httpx

    job_file = tmp_path / "named.json"
    job_file.write_text(_sleeper_job("named", tmp_path, instances=2))
    cluster.cli("job", "submit", str(job_file), check=True)
    (first,) = cluster.client.tasks()
    with httpx.Client(base_url=cluster.url, headers=cluster.auth_headers(), timeout=30) as http:
        body = _sleeper_job("named", tmp_path, instances=2)
        # Refused while it runs, and still once it has ended: OpenPAI keeps a name's job.
        for ended in (False, True):
            if ended:
                cluster.client.stop_task(first.id)
                _wait_ended(cluster, first.id)
            again = cluster.cli("job", "submit", str(job_file))
            assert again.returncode == 1
            (line,) = again.stderr.strip().splitlines()
            assert line.startswith("error: job name 'named' is taken by your job ")
            assert f"job {first.id} (" in line and "give this job another name" in line
            refused = http.post("/api/v2/jobs", content=body)
            assert refused.status_code == 409, refused.text
            assert refused.json()["code"] == "ConflictJobError"
            assert "admin~named names that job for good" in refused.json()["message"]
            assert [t.id for t in cluster.client.tasks()] == [first.id]
        named = http.get("/api/v2/jobs/admin~named").json()
        assert named["debugId"] == f"task-{first.id}"
        # Four at once, as the report's h4job: one is taken, the others refused.
        other = _sleeper_job("h4job", tmp_path, instances=1)
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            answers = list(pool.map(lambda _: http.post("/api/v2/jobs", content=other), range(4)))
        assert sorted(a.status_code for a in answers) == [202, 409, 409, 409]
        (h4job,) = [t for t in cluster.client.tasks() if t.name == "h4job"]
        assert http.get("/api/v2/jobs/admin~h4job").json()["debugId"] == f"task-{h4job.id}"
        # Its one instance (index 0) exits at once: it ends by itself, maybe already has.
        _wait_ended(cluster, h4job.id)


def test_submit_and_follow_speak_plainly_and_say_the_image_once(
    cluster: Cluster, tmp_path: Path
) -> None:
    job_file = tmp_path / "seed.json"
    job_file.write_text(json.dumps(SEED_JSON))
    (tmp_path / "ctx").mkdir()
    (tmp_path / "ctx" / "only.txt").write_text("one file\n")
    done = cluster.cli("job", "submit", str(job_file), str(tmp_path / "ctx"), "-f", check=True)
    assert "with 1 file (" in done.stdout and ": 1 role, 1 instance;" in done.stdout
    assert "(s)" not in done.stdout
    assert done.stdout.count("tensorflow/tensorflow:1.12.0-gpu-py3") == 1, done.stdout
    (task,) = cluster.client.tasks()
    described = cluster.cli("job", "describe", str(task.id), check=True).stdout
    assert described.count("tensorflow/tensorflow:1.12.0-gpu-py3") == 1, described
    command = cluster.cli("cmd", "run", "--config", "resources.slots=0", "--", "true", check=True)
    assert "1 role, 1 instance" in command.stdout
    (ran,) = [t for t in cluster.client.tasks() if t.kind == "command"]
    again = cluster.cli("job", "stop", str(ran.id))
    assert again.returncode == 1
    assert f"command {ran.id} has ended already (SUCCEEDED)" in again.stderr


CLONED = """\
protocolVersion: 2
name: cloned
type: job
prerequisites:
  - {name: image, type: dockerimage, uri: python:3.11}
secrets:
  word: from-the-secrets
taskRoles:
  main:
    instances: 1
    dockerImage: image
    resourcePerInstance: {cpu: 1, memoryMB: 128, gpu: 0}
    commands:
      - cat code.txt
      - echo "secret <% $secrets.word %>" | tr a-z A-Z
"""


def test_a_job_is_resubmitted_as_it_was_with_its_code_and_secrets_under_a_new_name(
    cluster: Cluster, tmp_path: Path
) -> None:
    code = tmp_path / "code"
    code.mkdir()
    (code / "code.txt").write_text("the uploaded code\n")
    (tmp_path / "job.yaml").write_text(CLONED)
    cluster.cli("job", "submit", str(tmp_path / "job.yaml"), str(code), "-f", check=True)
    (first,) = cluster.client.tasks()
    # As OpenPAI's Clone: a new job, the next free name, the same code and secrets.
    again = cluster.cli("job", "resubmit", str(first.id), "-f", "--json", check=True)
    final = json.loads(again.stdout.strip().splitlines()[-1])
    assert (final["name"], final["state"]) == ("cloned-2", "SUCCEEDED")
    lines = [e.line for e in cluster.client.task_logs(final["id"])]
    assert "the uploaded code" in lines and "SECRET FROM-THE-SECRETS" in lines, lines
    third = cluster.client.resubmit_task(final["id"])
    assert third.name == "cloned-3", "a clone's clone counts on from the stem"
    _wait_ended(cluster, third.id)
    named = cluster.client.resubmit_task(first.id, name="mine")
    assert named.name == "mine"
    _wait_ended(cluster, named.id)
    taken = cluster.cli("job", "resubmit", str(first.id), "--name", "cloned-2")
    assert taken.returncode == 1 and "job name 'cloned-2' is taken" in taken.stderr
    # Another user's job is theirs to submit again, not bob's.
    bob = cluster.add_user("bob")
    with pytest.raises(Exception, match="belongs to admin"):
        bob.resubmit_task(first.id)
    # A shell or notebook is started anew: its start makes secrets of its own.
    shell = cluster.client.start_shell("description: not again\n")
    with pytest.raises(Exception, match="is not submitted again"):
        cluster.client.resubmit_task(shell.id)
    cluster.client.kill_shell(shell.id)
