"""The rules of OpenPAI jobs without IO: completion policy, instance scripts, PAI variables,
port picking."""

from __future__ import annotations

import subprocess

from hypothesis import given
from hypothesis import strategies as st

from assay.master.tasks._rules import (
    PORT_BASE,
    Placed,
    RoleRule,
    decide,
    instance_ports,
    instance_script,
    pai_env,
    pick_ports,
)
from assay.protocol import TaskInstanceState, TaskState

W, R, S, F, X = (
    TaskInstanceState.WAITING,
    TaskInstanceState.RUNNING,
    TaskInstanceState.SUCCEEDED,
    TaskInstanceState.FAILED,
    TaskInstanceState.STOPPED,
)


def test_one_failure_fails_the_job_by_default() -> None:
    outcome = decide([RoleRule("worker", 3)], {"worker": [S, F, R]})
    assert outcome is not None and outcome.state == TaskState.FAILED
    assert "worker" in outcome.reason


def test_min_failed_minus_one_never_fails_and_all_ended_succeeds() -> None:
    roles = [RoleRule("worker", 2, min_failed=-1)]
    assert decide(roles, {"worker": [F, R]}) is None
    outcome = decide(roles, {"worker": [F, F]})
    assert outcome is not None and outcome.state == TaskState.SUCCEEDED


def test_default_min_succeeded_waits_for_every_instance_of_the_role() -> None:
    roles = [RoleRule("worker", 3)]
    assert decide(roles, {"worker": [S, S, R]}) is None
    outcome = decide(roles, {"worker": [S, S, S]})
    assert outcome is not None and outcome.state == TaskState.SUCCEEDED


def test_min_succeeded_one_ends_the_job_at_the_first_success() -> None:
    outcome = decide([RoleRule("main", 3, min_succeeded=1)], {"main": [S, R, W]})
    assert outcome is not None and outcome.state == TaskState.SUCCEEDED


def test_workers_succeeding_end_a_job_whose_server_never_ends_it() -> None:
    roles = [RoleRule("ps", 1, min_succeeded=-1), RoleRule("worker", 2)]
    assert decide(roles, {"ps": [R], "worker": [S, R]}) is None
    outcome = decide(roles, {"ps": [R], "worker": [S, S]})
    assert outcome is not None and outcome.state == TaskState.SUCCEEDED


def test_failure_is_checked_before_success() -> None:
    roles = [RoleRule("a", 1), RoleRule("b", 1)]
    outcome = decide(roles, {"a": [S], "b": [F]})
    assert outcome is not None and outcome.state == TaskState.FAILED


@given(st.lists(st.sampled_from([W, R, S, F, X]), min_size=1, max_size=8))
def test_an_open_job_has_an_instance_not_ended(states: list[TaskInstanceState]) -> None:
    roles = [RoleRule("r", len(states), min_failed=-1, min_succeeded=-1)]
    outcome = decide(roles, {"r": states})
    assert (outcome is None) == any(not s.ended for s in states)


def _run(script: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["/bin/bash", "-c", script], capture_output=True, text=True, check=False)


def test_instance_script_stops_at_the_first_failing_command_with_its_code() -> None:
    result = _run(instance_script(["echo one", "cd /", "false || exit 7", "echo never"]))
    assert result.returncode == 7
    assert result.stdout.split() == ["one"]


def test_instance_script_carries_directory_and_variables_between_commands() -> None:
    result = _run(instance_script(["cd /tmp", "X=5", 'echo "$PWD $X $PAI_WORK_DIR"']))
    assert result.returncode == 0
    assert result.stdout.split()[:2] == ["/tmp", "5"]


def test_pai_env_names_every_instance_host_and_ports() -> None:
    placed = {
        ("ps", 0): Placed("10.0.0.1", {"ps": [40000], "ssh": [40001], "http": [40002, 40003]}),
        ("worker", 0): Placed("10.0.0.2", {"ssh": [40000], "http": [40001]}),
        ("worker", 1): Placed("10.0.0.3", {"ssh": [40002], "http": [40003]}),
    }
    env = pai_env(
        job_name="j",
        user="alice",
        roles=[("ps", 1), ("worker", 2)],
        role="worker",
        index=1,
        placed=placed,
    )
    assert env["PAI_CURRENT_TASK_ROLE_NAME"] == "worker"
    assert env["PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX"] == "1" == env["PAI_TASK_INDEX"]
    assert env["PAI_TASK_ROLE_COUNT"] == "2" and env["PAI_TASK_ROLE_LIST"] == "ps,worker"
    assert env["PAI_TASK_ROLE_TASK_COUNT_worker"] == "2"
    assert env["PAI_HOST_IP_ps_0"] == "10.0.0.1"
    assert env["PAI_PORT_LIST_ps_0_ps"] == "40000"
    assert env["PAI_PORT_LIST_ps_0_http"] == "40002,40003"
    assert env["PAI_CONTAINER_HOST_IP"] == "10.0.0.3"


def test_host_lists_give_each_instance_as_ip_and_its_first_http_port_as_openpai_does() -> None:
    # OpenPAI's runtime writes ip:port with the instance's first "http" port, whatever other
    # labels the role declares first; TensorFlow's --ps_hosts/--worker_hosts need the port.
    placed = {
        ("ps", 0): Placed("10.0.0.1", {"ps": [40000], "ssh": [40001], "http": [40002, 40003]}),
        ("worker", 0): Placed("10.0.0.2", {"ssh": [40000], "http": [40001]}),
        ("worker", 1): Placed("10.0.0.3", {"ssh": [40002], "http": [40003]}),
    }
    env = pai_env(
        job_name="j",
        user="alice",
        roles=[("ps", 1), ("worker", 2)],
        role="ps",
        index=0,
        placed=placed,
    )
    assert env["PAI_TASK_ROLE_ps_HOST_LIST"] == "10.0.0.1:40002"
    assert env["PAI_TASK_ROLE_worker_HOST_LIST"] == "10.0.0.2:40001,10.0.0.3:40003"
    assert env["PAI_CURRENT_CONTAINER_PORT"] == "40002"


def test_every_instance_gets_openpai_s_ssh_and_http_ports_besides_those_it_declares() -> None:
    assert instance_ports({}) == {"ssh": 1, "http": 1}
    assert instance_ports({"ps": 1}) == {"ps": 1, "ssh": 1, "http": 1}
    assert instance_ports({"http": 2, "tb": 1}) == {"http": 2, "tb": 1, "ssh": 1}


@given(
    st.sets(st.integers(PORT_BASE, PORT_BASE + 50), max_size=30),
    st.dictionaries(st.sampled_from(["a", "b", "c"]), st.integers(1, 5)),
)
def test_picked_ports_are_distinct_and_avoid_taken_ones(
    taken: set[int], wanted: dict[str, int]
) -> None:
    got = pick_ports(taken, wanted)
    flat = [p for ports in got.values() for p in ports]
    assert len(flat) == len(set(flat)) == sum(wanted.values())
    assert not set(flat) & taken
    assert {k: len(v) for k, v in got.items()} == wanted
