"""Reading Determined command and generic-task configs, and ``assay cmd run`` argv, into the
native job spec."""

from __future__ import annotations

import pytest

from assay.config import (
    InvalidConfig,
    JobSpecKind,
    command_spec,
    entrypoint_command,
    load_task_config,
    secret_values,
)


def problems(text: str, kind: JobSpecKind = JobSpecKind.COMMAND) -> dict[str, str]:
    with pytest.raises(InvalidConfig) as info:
        load_task_config(text, kind=kind)
    return {d.path: d.message for d in info.value.details}


@pytest.mark.parametrize(
    ("entrypoint", "command"),
    [
        ("python3 train.py --lr 0.1", "python3 train.py --lr 0.1"),
        (["echo", "task ran"], "echo 'task ran'"),
        (["exit", "1"], "exit 1"),  # still the shell builtin
        (["echo hi && ls"], "echo hi && ls"),  # one item is a command line, as sh -c runs it
        (["python3", "-c", "print('x y')"], "python3 -c 'print('\"'\"'x y'\"'\"')'"),
    ],
)
def test_entrypoint_becomes_one_shell_command(entrypoint: str | list[str], command: str) -> None:
    assert entrypoint_command(entrypoint) == command


def test_generic_task_is_one_instance_of_role_task_in_the_context() -> None:
    spec = load_task_config('entrypoint: ["exit", "1"]\n', kind=JobSpecKind.GENERIC)
    assert (spec.kind, spec.source_format) == (JobSpecKind.GENERIC, "determined-task")
    (role,) = spec.roles
    assert (role.name, role.instances, role.commands, role.slots) == ("task", 1, ["exit 1"], 1)
    assert spec.context_required
    assert spec.name == "exit 1"
    assert spec.notes == []


def test_command_config_maps_resources_environment_and_description() -> None:
    text = """
description: nightly eval
entrypoint: python3 eval.py
resources:
  slots: 2
  resource_pool: gpu
  priority: 10
  weight: 2.5
  agent_label: big
environment:
  image: {cpu: "img:cpu", cuda: "img:cuda"}
  environment_variables:
    - A=1
    - {name: TOKEN, value: hunter22, secret: true}
"""
    spec = load_task_config(text, kind=JobSpecKind.COMMAND)
    assert (spec.kind, spec.source_format) == (JobSpecKind.COMMAND, "determined-command")
    assert (spec.name, spec.description) == ("nightly eval", "nightly eval")
    (role,) = spec.roles
    assert (role.name, role.slots, role.commands) == ("command", 2, ["python3 eval.py"])
    assert (spec.pool, spec.priority, spec.weight, spec.agent_label) == ("gpu", 10, 2.5, "big")
    assert spec.image == role.image == "img:cuda"  # it asks for slots: the cuda image
    assert spec.env == {"A": "1", "TOKEN": "hunter22"}
    assert spec.secret_env == ["TOKEN"]
    assert secret_values(spec) == ["hunter22"]
    assert spec.notes[0].startswith("environment.image (img:cuda): recorded")


def test_cpu_command_takes_the_cpu_image_and_variables() -> None:
    text = """
entrypoint: ls
resources: {slots: 0}
environment:
  image: {cpu: "img:cpu", cuda: "img:cuda"}
  environment_variables: {cpu: [X=cpu], cuda: [X=cuda]}
"""
    spec = load_task_config(text, kind=JobSpecKind.COMMAND)
    assert (spec.image, spec.env, spec.roles[0].slots) == ("img:cpu", {"X": "cpu"}, 0)


def test_work_dir_is_where_the_command_starts() -> None:
    spec = load_task_config("entrypoint: make\nwork_dir: /srv/my code\n", kind=JobSpecKind.COMMAND)
    assert spec.roles[0].commands == ["cd '/srv/my code'", "make"]


def test_every_problem_at_once_with_paths() -> None:
    found = problems(
        """
entrypoint: []
resources: {slots: -1, slots_per_trial: 2, priority: 0}
environment: {environment_variables: [3]}
hyperparameters: {}
"""
    )
    assert found == {
        "entrypoint": "must not be empty: give a command such as [python3, train.py]",
        "resources.slots": "must be >= 0, got -1",
        "resources.slots_per_trial": "is an experiment's key; a command or task asks for "
        "resources.slots",
        "resources.priority": "must be >= 1, got 0",
        "environment.environment_variables[0]": "must be a KEY=VALUE string or a map {name, "
        "value, secret}, got 3",
        "hyperparameters": found["hyperparameters"],
    }
    assert found["hyperparameters"].startswith("unknown key; valid keys are: bind_mounts")


def test_max_slots_below_slots_is_refused() -> None:
    found = problems("entrypoint: ls\nresources: {slots: 4, max_slots: 2}\n")
    assert found == {
        "resources.max_slots": "must be >= slots (4), got 2: the command could never start"
    }


def test_bind_mount_to_another_path_is_refused_and_same_path_is_noted() -> None:
    found = problems(
        "entrypoint: ls\nbind_mounts: [{host_path: /data, container_path: /mnt/data}]\n"
    )
    assert list(found) == ["bind_mounts[0].container_path"]
    assert "nothing is mounted at /mnt/data" in found["bind_mounts[0].container_path"]
    spec = load_task_config(
        "entrypoint: ls\nbind_mounts: [{host_path: /data, container_path: /data}]\n",
        kind=JobSpecKind.COMMAND,
    )
    (note,) = spec.notes
    assert note.startswith("bind_mounts[0]: applied only in a container")
    assert note.endswith("else the command reads /data on its host")
    assert [m.container_path for m in spec.container_options.mounts] == ["/data"]


def test_container_and_notebook_settings_are_accepted_with_notes() -> None:
    text = """
entrypoint: ls
debug: true
idle_timeout: 30m
notebook_idle_type: activity
slurm: {sbatch_args: [--exclusive]}
pbs: {}
resources: {shm_size: 4G, devices: ["/dev/fuse:/dev/fuse"]}
environment: {force_pull_image: true, add_capabilities: [SYS_ADMIN]}
"""
    notes = load_task_config(text, kind=JobSpecKind.COMMAND).notes
    assert [n.split(":")[0] for n in notes] == [
        "environment.force_pull_image",
        "environment.add_capabilities",
        "resources.shm_size",
        "resources.devices",
        "debug",
        "idle_timeout",
        "notebook_idle_type",
        "slurm",
    ]


def test_a_job_kind_is_not_a_task() -> None:
    with pytest.raises(ValueError, match="not a job"):
        load_task_config({"entrypoint": "ls"}, kind=JobSpecKind.JOB)


def test_command_spec_runs_argv_with_overrides() -> None:
    spec = command_spec(["python3", "train.py", "--name", "a b"], ["resources.slots=0"])
    assert spec.kind is JobSpecKind.COMMAND
    assert spec.roles[0].commands == ["python3 train.py --name 'a b'"]
    assert spec.roles[0].slots == 0
    assert spec.context_required


def test_command_spec_argv_replaces_the_config_entrypoint() -> None:
    config = {"entrypoint": "old", "description": "d", "resources": {"slots": 3}}
    spec = command_spec(["new"], ["resources.priority=5"], config=config)
    assert (spec.roles[0].commands, spec.roles[0].slots, spec.priority) == (["new"], 3, 5)
    assert config["entrypoint"] == "old"


def test_command_spec_reports_bad_overrides_and_no_command_together() -> None:
    with pytest.raises(InvalidConfig) as info:
        command_spec([], ["resources.slots=two", "oops"])
    assert [str(d) for d in info.value.details] == [
        "--config oops: must be key.path=value (no '=' found)",
        "entrypoint: required: give the command to run after -- (assay cmd run -- CMD)",
        'resources.slots: must be an integer, got "two"',
    ]
