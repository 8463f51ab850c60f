"""The pods a Kubernetes pool makes, read back through the official client's models (what the
API server would be sent), without a cluster."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

pytest.importorskip("kubernetes")

from kubernetes import client

from assay.config import KubernetesPoolConfig
from assay.protocol import ClusterInfo, Container, Start, TrialInfo
from assay.protocol._container import Mount
from assay.rm._kubernetes import KubernetesManager
from assay.rm._pods import (
    CONTAINER_NAME,
    FINALIZER,
    as_pod,
    label_value,
    merge_pod_specs,
    pod_manifest,
    pod_name,
    pod_problems,
)
from assay.rm._step import ADDRESS_ENV, START_ENV

MASTER = "http://assay-master.assay.svc:8080"


def start(
    *,
    slots: int = 2,
    container: Container | None = None,
    pod_spec: dict[str, Any] | None = None,
    storage: dict[str, Any] | None = None,
    allocation_id: str = "7.3.1",
) -> Start:
    config: dict[str, Any] = {"environment": {"pod_spec": pod_spec}} if pod_spec else {}
    return Start(
        allocation_id=allocation_id,
        trial_id=3,
        experiment_id=7,
        run=1,
        context=None,
        entrypoint=["python", "train.py"],
        env={"LR": "0.1", "ASSAY_TOKEN": "secret"},
        slots=[str(i) for i in range(slots)],
        cluster_info=ClusterInfo(
            master_url=MASTER,
            cluster_id="c",
            agent_id="gpus.node-a",
            slot_ids=[str(i) for i in range(slots)],
            task_id="7.3",
            allocation_id=allocation_id,
            session_token="secret",
            task_type="TRIAL",
            latest_checkpoint=None,
            trial=TrialInfo(
                trial_id=3,
                experiment_id=7,
                trial_seed=1,
                hparams={},
                config=config,
                steps_completed=0,
                trial_run_id=1,
            ),
            checkpoint_storage=storage,
        ),
        container=container,
    )


def pod_of(message: Start, **config: Any) -> tuple[dict[str, Any], client.V1Pod]:
    manifest = pod_manifest(
        message,
        config=KubernetesPoolConfig.model_validate({"default_image": "assay:1", **config}),
        pool="gpus",
        master_url=MASTER,
        node_name="node-a",
    )
    pod, problems = as_pod(manifest)
    assert problems == []
    assert isinstance(pod, client.V1Pod)
    return manifest, pod


def assay_container(pod: client.V1Pod) -> client.V1Container:
    (container,) = [c for c in pod.spec.containers if c.name == CONTAINER_NAME]
    return container


def env_of(container: client.V1Container) -> dict[str, Any]:
    return {e.name: e for e in container.env or []}


def test_a_gpu_start_asks_for_its_gpus_on_the_chosen_node_with_the_default_image() -> None:
    _, pod = pod_of(start(slots=2), default_image="assay/harness:1")
    container = assay_container(pod)
    assert container.image == "assay/harness:1"
    assert container.image_pull_policy == "IfNotPresent"
    assert container.resources.limits == {"nvidia.com/gpu": "2"}
    assert container.resources.requests == {"nvidia.com/gpu": "2"}
    assert pod.spec.node_selector == {"kubernetes.io/hostname": "node-a"}
    assert pod.spec.restart_policy == "Never"
    assert pod.spec.termination_grace_period_seconds == 30
    assert container.command[:3] == ["python", "-m", "assay.rm"]
    assert container.command[container.command.index("--master") + 1] == MASTER
    assert container.command[container.command.index("--work-root") + 1] == "/run/assay"


def test_a_cpu_pool_asks_for_cores_and_no_gpu() -> None:
    _, pod = pod_of(start(slots=4), slot_type="cpu")
    resources = assay_container(pod).resources
    assert resources.limits == {"cpu": "4"}
    assert resources.requests == {"cpu": "4"}


def test_a_start_without_slots_asks_for_no_resource() -> None:
    _, pod = pod_of(start(slots=0))
    resources = assay_container(pod).resources
    assert not resources or not (resources.limits or resources.requests)


def test_the_start_travels_whole_in_its_variable_and_the_token_from_the_secret() -> None:
    message = start()
    _, pod = pod_of(message, token_secret="my-token")
    env = env_of(assay_container(pod))
    sent = Start.from_dict(json.loads(env[START_ENV].value))
    # The allocation's token is never in the start's JSON: it is the ASSAY_TOKEN variable.
    assert sent == replace(message, cluster_info=replace(message.cluster_info, session_token=""))
    assert env["ASSAY_TOKEN"].value == "secret"
    assert env["LR"].value == "0.1"
    ref = env["ASSAY_AGENT_TOKEN"].value_from.secret_key_ref
    assert (ref.name, ref.key) == ("my-token", "token")
    # The pod's own address, where a task's server listens (the downward API fills it in).
    assert env[ADDRESS_ENV].value_from.field_ref.field_path == "status.podIP"


def test_a_pool_without_a_token_secret_gives_no_token_variable() -> None:
    _, pod = pod_of(start(), token_secret="")
    assert "ASSAY_AGENT_TOKEN" not in env_of(assay_container(pod))


def test_the_experiments_image_is_used_and_force_pull_pulls_always() -> None:
    _, pod = pod_of(start(container=Container(image="org/trainer:2", force_pull=True)))
    container = assay_container(pod)
    assert container.image == "org/trainer:2"
    assert container.image_pull_policy == "Always"


def test_labels_are_valid_values_and_the_real_ids_are_annotations() -> None:
    long_id = "experiment 12/trial 7:run#3 " + "x" * 80
    _, pod = pod_of(start(allocation_id=long_id))
    labels, annotations = pod.metadata.labels, pod.metadata.annotations
    for value in labels.values():
        assert len(value) <= 63
        assert value[0].isalnum() and value[-1].isalnum(), value
        assert all(c.isalnum() or c in "-_." for c in value), value
    assert labels["assay.pool"] == "gpus"
    assert annotations["assay.allocation"] == long_id
    assert annotations["assay.pool"] == "gpus"
    assert annotations["assay.node"] == "node-a"
    assert label_value(long_id) != label_value(long_id + "y"), "two ids, one label"
    assert FINALIZER in pod.metadata.finalizers


def test_a_pod_name_is_a_dns_label_the_same_for_every_start_and_apart_per_pool() -> None:
    name = pod_name("gpus", "Exp 7/Trial 3")
    assert name == pod_name("gpus", "Exp 7/Trial 3")
    assert name != pod_name("cpus", "Exp 7/Trial 3")
    assert len(name) <= 63
    assert all(c.islower() or c.isdigit() or c == "-" for c in name)


def test_volumes_hold_the_work_root_shm_checkpoints_and_bind_mounts() -> None:
    message = start(
        container=Container(
            image="i",
            shm_size=2 << 30,
            mounts=[Mount("/data/sets", "/datasets", read_only=True, propagation="rslave")],
        ),
        storage={"type": "shared_fs", "host_path": "/mnt/checkpoints"},
    )
    _, pod = pod_of(message, checkpoint_claim="assay-checkpoints")
    volumes = {v.name: v for v in pod.spec.volumes}
    mounts = {m.name: m for m in assay_container(pod).volume_mounts}
    assert mounts["assay-work"].mount_path == "/run/assay"
    assert volumes["assay-work"].empty_dir is not None
    assert volumes["assay-shm"].empty_dir.medium == "Memory"
    assert volumes["assay-shm"].empty_dir.size_limit == str(2 << 30)
    assert mounts["assay-shm"].mount_path == "/dev/shm"
    assert volumes["assay-checkpoints"].persistent_volume_claim.claim_name == "assay-checkpoints"
    assert mounts["assay-checkpoints"].mount_path == "/mnt/checkpoints"
    assert volumes["assay-mount-0"].host_path.path == "/data/sets"
    assert mounts["assay-mount-0"].mount_path == "/datasets"
    assert mounts["assay-mount-0"].read_only is True
    assert mounts["assay-mount-0"].mount_propagation == "HostToContainer"


def test_no_claim_or_no_shared_fs_storage_mounts_no_checkpoint_volume() -> None:
    s3 = {"type": "s3", "bucket": "b"}
    for message, config in (
        (start(storage={"type": "shared_fs", "host_path": "/c"}), {}),
        (start(storage=s3), {"checkpoint_claim": "claim"}),
    ):
        _, pod = pod_of(message, **config)
        assert "assay-checkpoints" not in {v.name for v in pod.spec.volumes}


def test_pull_secrets_service_account_and_node_selector_come_from_the_pool() -> None:
    _, pod = pod_of(
        start(),
        image_pull_secrets=["regcred"],
        service_account="trainer",
        node_selector={"gpu": "a100"},
        namespace="ml",
    )
    assert [s.name for s in pod.spec.image_pull_secrets] == ["regcred"]
    assert pod.spec.service_account_name == "trainer"
    assert pod.spec.node_selector == {"gpu": "a100", "kubernetes.io/hostname": "node-a"}
    assert pod.metadata.namespace == "ml"


POOL_SPEC = {
    "metadata": {"labels": {"team": "vision"}},
    "spec": {
        "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "nodeSelector": {"zone": "a"},
        "containers": [
            {
                "name": "determined-container",
                "env": [{"name": "FROM_POOL", "value": "1"}, {"name": "LR", "value": "pool"}],
                "resources": {"limits": {"memory": "64Gi"}},
                "securityContext": {"runAsUser": 1000},
            }
        ],
    },
}


def test_the_experiments_pod_spec_merges_over_the_pools_and_assays_fields_win() -> None:
    experiment = {
        "metadata": {"labels": {"team": "nlp", "assay.pool": "spoofed"}},
        "spec": {
            "priorityClassName": "high",
            "restartPolicy": "Always",
            "containers": [
                {
                    "name": "determined-container",
                    "image": "ignored:1",
                    "env": [{"name": "FROM_EXPERIMENT", "value": "2"}],
                },
                {"name": "sidecar", "image": "busybox"},
            ],
            "volumes": [{"name": "extra", "emptyDir": {}}],
        },
    }
    _, pod = pod_of(start(pod_spec=experiment), pod_spec=POOL_SPEC, default_image="assay:1")
    assert pod.metadata.labels["team"] == "nlp"
    assert pod.metadata.labels["assay.pool"] == "gpus"
    assert pod.spec.priority_class_name == "high"
    assert pod.spec.tolerations[0].key == "gpu"
    assert pod.spec.restart_policy == "Never"
    assert pod.spec.node_selector == {"zone": "a", "kubernetes.io/hostname": "node-a"}
    assert [c.name for c in pod.spec.containers] == [CONTAINER_NAME, "sidecar"]
    container = assay_container(pod)
    assert container.image == "assay:1"
    assert container.security_context.run_as_user == 1000
    assert container.resources.limits == {"memory": "64Gi", "nvidia.com/gpu": "2"}
    env = env_of(container)
    assert env["FROM_POOL"].value == "1"
    assert env["FROM_EXPERIMENT"].value == "2"
    assert env["LR"].value == "0.1", "the start's variables win over the pod spec's"
    assert "extra" in {v.name for v in pod.spec.volumes}
    assert "assay-work" in {v.name for v in pod.spec.volumes}


def test_without_a_determined_container_the_first_container_is_assays() -> None:
    spec = {"spec": {"containers": [{"name": "main", "workingDir": "/w"}, {"name": "side"}]}}
    manifest, pod = pod_of(start(), pod_spec=spec)
    assert pod.spec.containers[0].name == "main"
    assert pod.spec.containers[0].command[2] == "assay.rm"
    assert pod.spec.containers[0].working_dir == "/w"
    assert manifest["metadata"]["annotations"]["assay.container"] == "main"


def test_merging_leaves_its_inputs_unchanged() -> None:
    before = json.dumps(POOL_SPEC, sort_keys=True)
    merge_pod_specs(POOL_SPEC, {"spec": {"containers": [{"name": "determined-container"}]}})
    pod_of(start(), pod_spec=POOL_SPEC)
    assert json.dumps(POOL_SPEC, sort_keys=True) == before


def test_a_misspelt_field_in_a_pod_spec_is_named_with_its_path() -> None:
    spec = {"spec": {"nodeselector": {"a": "b"}, "containers": [{"name": "x", "imagePull": 1}]}}
    manifest = pod_manifest(
        start(pod_spec=spec),
        config=KubernetesPoolConfig(default_image="assay:1"),
        pool="gpus",
        master_url=MASTER,
        node_name="node-a",
    )
    problems = pod_problems(manifest)
    assert any("spec.nodeselector" in p for p in problems), problems
    assert any("spec.containers[0].imagePull" in p for p in problems), problems
    assert all("\n" not in p for p in problems)


def test_a_wrongly_typed_field_in_a_pod_spec_is_refused_in_one_line() -> None:
    spec = {"spec": {"containers": [{"name": "determined-container", "ports": "8080"}]}}
    manifest = pod_manifest(
        start(pod_spec=spec),
        config=KubernetesPoolConfig(default_image="assay:1"),
        pool="gpus",
        master_url=MASTER,
        node_name="node-a",
    )
    (problem,) = pod_problems(manifest)
    assert problem.startswith("the Pod spec is not a valid Kubernetes Pod")
    assert "\n" not in problem


def test_a_pod_spec_that_is_not_a_mapping_is_refused_before_the_models() -> None:
    with pytest.raises(ValueError, match="spec must be a mapping"):
        pod_manifest(
            start(),
            config=KubernetesPoolConfig(default_image="assay:1", pod_spec={"spec": ["containers"]}),
            pool="gpus",
            master_url=MASTER,
            node_name="node-a",
        )


def test_a_manager_builds_pods_without_a_cluster_for_its_own_node_ids() -> None:
    manager = KubernetesManager(
        KubernetesPoolConfig(master_url="http://elsewhere:1", default_image="assay:1"),
        pool="gpus",
        master_url=MASTER,
        api=lambda: pytest.fail("no API is called to build a pod"),
    )
    assert manager.node_id("node-a") == "gpus.node-a"
    manifest = manager.manifest("gpus.node-a", replace(start(), slots=["0"]))
    pod, problems = as_pod(manifest)
    assert problems == []
    assert pod.spec.node_selector["kubernetes.io/hostname"] == "node-a"
    command = pod.spec.containers[0].command
    assert command[command.index("--master") + 1] == "http://elsewhere:1"


def test_a_start_naming_no_image_on_a_pool_without_a_default_is_refused() -> None:
    with pytest.raises(ValueError, match=r"no kubernetes\.default_image"):
        pod_manifest(
            start(),
            config=KubernetesPoolConfig(),
            pool="gpus",
            master_url=MASTER,
            node_name="node-a",
        )
