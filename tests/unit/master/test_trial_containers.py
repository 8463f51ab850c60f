"""Trials that name an image: only agents that run containers take them, their start message
carries the container, and a pool with no such agent refuses them at submission."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from assay.config import (
    ExperimentConfig,
    JobSpec,
    JobSpecKind,
    ResourcePoolConfig,
    TaskRoleSpec,
    load_experiment_config,
    load_task_config,
)
from assay.errors import InvalidConfig
from assay.master.kernel._containers import (
    container_problem,
    job_container,
    job_in_containers,
    job_label,
    offered_labels,
    pod_image_problem,
    pull_problem,
    request_label,
    runs_containers,
    slurm_problem,
    trial_container,
    trial_image,
)
from assay.master.queue._room import AgentRoom, TrialShape, _trial_never_fits
from assay.protocol import Mount, RegistryAuth
from assay.scheduler import Agent, Job, PolicyKind, PoolSnapshot, Request, schedule


def _config(**extra: Any) -> ExperimentConfig:
    raw: dict[str, Any] = {
        "entrypoint": "python3 train.py",
        "searcher": {"name": "single", "metric": "loss", "max_length": 1},
        "hyperparameters": {},
        **extra,
    }
    return load_experiment_config(raw)


def _placed(request: Request, agents: dict[str, tuple[frozenset[str], str]]) -> set[str]:
    """The agents one pass places ``request`` on, each agent (labels, runtime) with 1 slot."""
    pool = PoolSnapshot(
        name="default",
        agents=tuple(
            Agent(
                id=agent_id,
                slots=("0",),
                free=("0",),
                labels=offered_labels(labels, runtime),
            )
            for agent_id, (labels, runtime) in agents.items()
        ),
        jobs={"j": Job("j")},
        pending=(request,),
        running=(),
        policy=PolicyKind.PRIORITY,
    )
    return set(schedule(pool, now=0.0).assign.get(request.id, {}))


@pytest.mark.parametrize(
    ("label", "image", "expected"),
    [
        (None, False, {"bare", "podman", "gpu-bare", "gpu-podman"}),
        (None, True, {"podman", "gpu-podman"}),
        ("gpu", False, {"gpu-bare", "gpu-podman"}),
        ("gpu", True, {"gpu-podman"}),
    ],
)
def test_a_trial_in_an_image_goes_only_to_agents_that_run_containers_and_carry_its_label(
    label: str | None, image: bool, expected: set[str]
) -> None:
    agents = {
        "bare": (frozenset(), ""),
        "podman": (frozenset(), "podman"),
        "gpu-bare": (frozenset({"gpu"}), ""),
        "gpu-podman": (frozenset({"gpu"}), "podman"),
    }
    possible: set[str] = set()
    for only, offer in agents.items():
        request = Request("1", "j", 1, label=request_label(label, image))
        possible |= _placed(request, {only: offer})
    assert possible == expected


def test_an_agent_without_a_runtime_offers_exactly_its_own_labels() -> None:
    assert offered_labels(frozenset({"a"}), "") == frozenset({"a"})
    assert request_label("a", False) == "a" and request_label(None, False) is None


def test_the_start_message_carries_the_image_the_mounts_the_pull_policy_and_credentials() -> None:
    cfg = _config(
        environment={
            "image": {"cpu": "team/cpu:1", "cuda": "team/cuda:1"},
            "force_pull_image": True,
            "registry_auth": {"username": "u", "password": "p", "serveraddress": "reg.example"},
        },
        bind_mounts=[{"host_path": "/data", "container_path": "/mnt/data", "read_only": True}],
    )
    container = trial_container(cfg, "cuda")
    assert container is not None
    assert container.image == "team/cuda:1" and container.force_pull
    assert container.mounts == [Mount("/data", "/mnt/data", True, "rprivate")]
    assert container.auth == RegistryAuth("u", "p", "reg.example")
    assert trial_container(cfg, "cpu") is not None
    assert trial_container(_config(), "cpu") is None


def test_an_image_named_for_one_device_type_runs_every_trial_in_a_container() -> None:
    cfg = _config(environment={"image": {"cuda": "team/cuda:1"}})
    assert trial_image(cfg, "cpu") == "team/cuda:1"
    container = trial_container(cfg, "cpu")
    assert container is not None and container.image == "team/cuda:1"


def test_a_pool_without_an_agent_that_runs_containers_refuses_an_image_naming_why() -> None:
    cfg = _config(environment={"image": "team/train:1"})
    problem = container_problem(cfg, "gpus", pool_runs_containers=False)
    assert problem is not None
    assert problem.path == "environment.image"
    assert "'team/train:1'" in problem.message and "resource pool 'gpus'" in problem.message
    assert "--container-runtime podman" in problem.message
    assert container_problem(cfg, "gpus", pool_runs_containers=True) is None
    # An autoscaled pool's agents are yet to come: they may run containers.
    assert container_problem(cfg, "gpus", pool_runs_containers=False, autoscaled=True) is None
    assert container_problem(_config(), "gpus", pool_runs_containers=False) is None


def test_a_slurm_pool_refuses_an_image_saying_its_jobs_are_processes() -> None:
    cfg = _config(environment={"image": "team/train:1"})
    problem = container_problem(cfg, "hpc", pool_runs_containers=False, pool_type="slurm")
    assert problem is not None and problem.path == "environment.image"
    assert "Slurm pool" in problem.message and "leave environment.image out" in problem.message


def test_every_kubernetes_pool_runs_containers_and_an_agents_pool_when_an_agent_says() -> None:
    k8s = ResourcePoolConfig(pool_name="k8s", type="kubernetes")
    agents = ResourcePoolConfig(pool_name="default")
    assert runs_containers(k8s, agents_say=False)
    assert not runs_containers(agents, agents_say=False)
    assert runs_containers(agents, agents_say=True)
    assert not runs_containers(None, agents_say=False)


def test_a_waiting_image_trial_says_it_needs_an_agent_that_runs_containers() -> None:
    bare = [AgentRoom(2, labels=frozenset({"gpu"}))]
    why = _trial_never_fits(TrialShape(1, image="team/train:1"), bare, "default")
    assert why == (
        "its trials need an agent with a container runtime (they run in image 'team/train:1'); "
        "no connected agent of pool 'default' has it"
    )
    both = _trial_never_fits(TrialShape(1, label="gpu", image="i"), bare, "default")
    assert both is not None and "label 'gpu' and a container runtime" in both
    assert both.endswith("has both")
    with_runtime = [AgentRoom(2, labels=frozenset({"gpu"}), containers=True)]
    assert _trial_never_fits(TrialShape(1, label="gpu", image="i"), with_runtime, "p") is None


def _job(**extra: Any) -> JobSpec:
    role = TaskRoleSpec(name="worker", commands=["python3 work.py"], image="team/role:1")
    return JobSpec(
        kind=JobSpecKind.JOB,
        name="j",
        source_format="openpai-v2",
        roles=[role],
        pool="gpus",
        notes=[
            "taskRoles.*.dockerImage (team/role:1): recorded as the image of the instances; ...",
            "taskRoles.worker.shmMB: not applied",
        ],
        **extra,
    )


def test_a_job_runs_in_containers_of_its_images_where_its_pool_has_agents_that_run_them() -> None:
    spec = job_in_containers(_job(), pool_runs_containers=True)
    assert spec.containers
    assert spec.notes == [
        "taskRoles.worker.shmMB: not applied",
        "its instances run in containers of team/role:1, on the agents of pool 'gpus' that run "
        "containers",
    ]
    assert job_label(spec) == request_label(None, True)
    assert spec.image_of(spec.roles[0]) == "team/role:1"


def test_a_job_runs_as_processes_with_its_image_recorded_where_no_agent_runs_containers() -> None:
    spec = _job()
    assert job_in_containers(spec, pool_runs_containers=False) is spec
    assert not spec.containers and job_label(spec) is None
    imageless = _job().model_copy(
        update={"roles": [TaskRoleSpec(name="worker", commands=["true"])]}
    )
    assert job_in_containers(imageless, pool_runs_containers=True) is imageless


def test_dockers_own_auth_form_and_shm_size_reach_the_container() -> None:
    token = base64.b64encode(b"me:s3cret").decode()
    cfg = _config(
        environment={"image": "i", "registry_auth": {"auth": token}},
        resources={"shm_size": "1G"},
    )
    container = trial_container(cfg, "cpu")
    assert container is not None
    assert container.auth == RegistryAuth("me", "s3cret", "")
    assert container.shm_size == cfg.resources.shm_size and container.shm_size > 0


@pytest.mark.parametrize(
    ("mount", "where", "says"),
    [
        ({"propagation": "Z"}, "propagation", "must be one of rprivate, private"),
        ({"host_path": "/a,b"}, "host_path", "must not contain a comma"),
        ({"container_path": "/x,readonly=false"}, "container_path", "must not contain a comma"),
    ],
)
def test_a_bind_mount_the_runtime_would_misread_is_refused(
    mount: dict[str, str], where: str, says: str
) -> None:
    raw = {"host_path": "/data", "container_path": "/data", **mount}
    with pytest.raises(InvalidConfig) as refused:
        _config(bind_mounts=[raw])
    assert any(
        d.path == f"bind_mounts[0].{where}" and says in d.message for d in refused.value.details
    ), refused.value.details


def test_a_command_in_a_container_gets_its_pull_shm_mounts_and_registry_credentials() -> None:
    text = """
entrypoint: ls
environment:
  image: team/cmd:1
  force_pull_image: true
  registry_auth: {username: me, password: s3cret, serveraddress: registry.example}
resources: {shm_size: 1G}
bind_mounts: [{host_path: /data, container_path: /data, read_only: true}]
"""
    spec = load_task_config(text, kind=JobSpecKind.COMMAND)
    assert "s3cret" not in str(spec.model_dump(exclude={"secrets"})), "credentials in the spec"
    placed = job_in_containers(spec, pool_runs_containers=True)
    assert not [n for n in placed.notes if "applied only in a container" in n]
    container = job_container(placed, "team/cmd:1")
    assert container.force_pull and container.shm_size == 1024**3
    assert [(m.host_path, m.read_only) for m in container.mounts] == [("/data", True)]
    assert container.auth is not None and container.auth.password == "s3cret"
    assert container.auth.server == "registry.example"
    # Without a runtime in the pool the notes stay: the settings are not applied.
    bare = job_in_containers(spec, pool_runs_containers=False)
    assert len([n for n in bare.notes if "applied only in a container" in n]) == 4


def test_a_kubernetes_pool_refuses_registry_credentials_naming_its_pull_secrets() -> None:
    cfg = _config(environment={"image": "team/train:1", "registry_auth": {"username": "me"}})
    k8s = ResourcePoolConfig(pool_name="k8s", type="kubernetes")
    problem = pull_problem(cfg, k8s)
    assert problem is not None and problem.path == "environment.registry_auth"
    assert "image_pull_secrets" in problem.message
    assert pull_problem(cfg, ResourcePoolConfig(pool_name="default")) is None
    assert pull_problem(_config(environment={"image": "team/train:1"}), k8s) is None


def test_a_slurm_pool_refuses_determineds_slots_per_node_and_others_ignore_the_section() -> None:
    cfg = _config(slurm={"slots_per_node": 4, "sbatch_args": ["--time=1:00:00"]})
    hpc = ResourcePoolConfig(pool_name="hpc", type="slurm")
    problem = slurm_problem(cfg, hpc)
    assert problem is not None and problem.path == "slurm.slots_per_node"
    assert slurm_problem(_config(slurm={"sbatch_args": ["--time=1:00:00"]}), hpc) is None
    assert slurm_problem(cfg, ResourcePoolConfig(pool_name="default")) is None


def test_a_misspelt_key_of_the_slurm_section_is_refused_naming_the_right_one() -> None:
    with pytest.raises(InvalidConfig) as caught:
        _config(slurm={"sbatch_arg": ["--time=1:00:00"]})
    (detail,) = caught.value.details
    assert detail.path == "slurm.sbatch_arg" and "sbatch_args" in detail.message


def test_a_kubernetes_pool_without_a_default_image_requires_one_in_the_config() -> None:
    bare = ResourcePoolConfig(pool_name="k8s", type="kubernetes")
    problem = pod_image_problem(_config(), bare)
    assert problem is not None and problem.path == "environment.image"
    assert "default_image" in problem.message
    assert pod_image_problem(_config(environment={"image": "team/train:1"}), bare) is None
    given = ResourcePoolConfig.model_validate(
        {"pool_name": "k8s", "type": "kubernetes", "kubernetes": {"default_image": "a:1"}}
    )
    assert pod_image_problem(_config(), given) is None
