"""Every real OpenPAI job and Determined generic-task config of the compat corpus is either read
into a job spec or refused with exactly one problem naming the one feature assay cannot honour.

The expected outcome of each file is written here, so a reader that starts refusing a file it
read (or reading one it refused) fails a test; a file added to the corpus fails until its
outcome is written down too.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.config import InvalidConfig, JobSpec, JobSpecKind, load_job_file, render_commands
from tests.corpus import compat_dir, missing

COMPAT = compat_dir()
OPENPAI = COMPAT / "openpai"
TASKS = COMPAT / "determined" / "tasks"
SPEC = "SPEC__pai-job-protocol.yaml"
ACCEPTED = "accepted"

# File -> ACCEPTED, or (the path of the one problem, words its message must hold).
EXPECTED: dict[str, str | tuple[str, str]] = {
    # The example at the end of the annotated v2 spec (its second YAML document).
    SPEC: ACCEPTED,
    "docs__manual__cluster-user__examples__hello-world-job.yaml": ACCEPTED,
    "examples__Distributed-example__Lite-imagenet-single-mul-DDP-gloo.yaml": ACCEPTED,
    "examples__Distributed-example__cifar10-single-mul-DDP-gloo-Apex-mixed.yaml": ACCEPTED,
    "examples__Distributed-example__cifar10-single-mul-DDP-gloo.yaml": ACCEPTED,
    "examples__Distributed-example__cifar10-single-mul-DDP-nccl-Apex-mixed.yaml": ACCEPTED,
    "examples__Distributed-example__cifar10-single-mul-DDP-nccl.yaml": ACCEPTED,
    "examples__Distributed-example__cifar10-single-node-gpus-cpu-DP.yaml": ACCEPTED,
    "examples__MXNet_cifar10__yaml__cifar10_resnet20_1gpu.yaml": ACCEPTED,
    "examples__cntk_mnist__yaml__ConvNet_gpu1.yaml": ACCEPTED,
    "examples__mnist_500_tasks__yaml__CPU_500Task_MNIST.yaml": (
        "extras.com.microsoft.pai.runtimeplugin[1]",
        "teamwise_storage mounts the team's storage (confignfs)",
    ),
    "examples__pytorch_cifar10__yaml__Resnet18_12cpu.yaml": ACCEPTED,
    "examples__pytorch_cifar10__yaml__Resnet18_1gpu.yaml": ACCEPTED,
    "examples__pytorch_cifar10__yaml__Resnet18_4gpu.yaml": ACCEPTED,
    "examples__pytorch_cifar10__yaml__Resnet18_horovod.yaml": ACCEPTED,
    "examples__tensorflow_cifar10__cifar10_vgg16_tf_cpu.yaml": ACCEPTED,
    "examples__tensorflow_cifar10__cifar10_vgg16_tf_gpu.yaml": ACCEPTED,
    "examples__tensorflow_cifar10__cifar10_vgg16_tf_gpu_distributed.yaml": ACCEPTED,
    "examples__tensorflow_cifar10__cifar10_vgg16_tf_gpu_horovod.yaml": ACCEPTED,
    "marketplace-v2__caffe-mnist.yaml": ACCEPTED,
    "marketplace-v2__caffe2-resnet50.yaml": ACCEPTED,
    "marketplace-v2__chainer-cifar.yaml": ACCEPTED,
    "marketplace-v2__horovod-pytorch-synthetic-benchmark.yaml": (
        "extras.com.microsoft.pai.runtimeplugin[0].parameters.sshbarrier",
        "assay runs no SSH server in instances",
    ),
    "marketplace-v2__keras-tensorflow-mnist.yaml": ACCEPTED,
    "marketplace-v2__mxnet-autoencoder.yaml": ACCEPTED,
    "marketplace-v2__pytorch-mnist.yaml": ACCEPTED,
    "marketplace-v2__pytorch-regression.yaml": ACCEPTED,
    "marketplace-v2__rocm-pytorch-mnist.yaml": ACCEPTED,
    "marketplace-v2__rocm-tensorflow2.yaml": ACCEPTED,
    "marketplace-v2__sklearn-text-vectorizers.yaml": ACCEPTED,
    "marketplace-v2__tensorflow-cifar10.yaml": ACCEPTED,
    "marketplace-v2__tensorflow-serving-mnist.yaml": ACCEPTED,
    "e2e__generic_task__test_config.yaml": ACCEPTED,
    "e2e__generic_task__test_config_error.yaml": ACCEPTED,
    "e2e__generic_task__test_config_fork.yaml": ACCEPTED,
    "e2e__generic_task__test_config_pause.yaml": ACCEPTED,
}
GENERIC_TASK_COMMANDS = {
    "e2e__generic_task__test_config.yaml": "echo 'task ran'",
    "e2e__generic_task__test_config_error.yaml": "exit 1",
    "e2e__generic_task__test_config_fork.yaml": "echo forked",
    "e2e__generic_task__test_config_pause.yaml": "sleep 5",
}


def _corpus_files() -> list[Path]:
    files = [p for p in sorted(OPENPAI.glob("*.yaml")) if not p.name.startswith("SPEC__")] + sorted(
        TASKS.glob("*.yaml")
    )
    if (OPENPAI / SPEC).is_file():
        files.insert(0, OPENPAI / SPEC)
    return files


def _params() -> list[object]:
    if not OPENPAI.is_dir() or not TASKS.is_dir():
        return [pytest.param(None, id="missing")]
    return [pytest.param(p, id=p.name) for p in _corpus_files()]


def _text(path: Path) -> str:
    text = path.read_text()
    if path.name == SPEC:
        # The annotated schema is the first YAML document; the example job is the second.
        return text.split("\n---\n")[-1]
    return text


def _load(path: Path) -> JobSpec:
    return load_job_file(_text(path), filename=path.name)


@pytest.mark.parametrize("path", _params())
def test_corpus_file_is_accepted_or_refused_for_one_named_feature(path: Path | None) -> None:
    if path is None:
        missing(OPENPAI if not OPENPAI.is_dir() else TASKS)
    assert path.name in EXPECTED, f"{path.name} is new: write its expected outcome in EXPECTED"
    expected = EXPECTED[path.name]
    if isinstance(expected, str):
        spec = _load(path)
        for role in spec.roles:
            assert all(role.commands)
            render_commands(spec, role.name)  # every template resolves
        return
    with pytest.raises(InvalidConfig) as info:
        _load(path)
    where, words = expected
    assert [d.path for d in info.value.details] == [where]
    assert words in info.value.details[0].message


def test_every_expected_file_is_in_the_corpus() -> None:
    if not OPENPAI.is_dir() or not TASKS.is_dir():
        missing(OPENPAI if not OPENPAI.is_dir() else TASKS)
    present = {p.name for p in _corpus_files()}
    assert set(EXPECTED) - present == set()


def test_generic_tasks_run_their_entrypoints_as_shell_commands() -> None:
    if not TASKS.is_dir():
        missing(TASKS)
    for name, command in GENERIC_TASK_COMMANDS.items():
        spec = _load(TASKS / name)
        assert spec.kind is JobSpecKind.GENERIC
        assert [r.commands for r in spec.roles] == [[command]]


def test_spec_example_renders_its_deployment_and_templates() -> None:
    if not (OPENPAI / SPEC).is_file():
        missing(OPENPAI / SPEC)
    spec = _load(OPENPAI / SPEC)
    assert [r.name for r in spec.roles] == ["worker", "ps_server"]
    worker, ps = spec.roles
    assert (worker.slots, worker.ports, worker.min_succeeded_instances) == (
        4,
        {"ssh": 1, "http": 1},
        1,
    )
    assert ps.min_succeeded_instances == -1
    rendered = render_commands(spec, "ps_server")
    assert (
        rendered[0]
        == "wget https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz -P data_cifar10"
    )
    assert rendered[-1].startswith(
        "hdfs dfs -cp output_tensorflow_cifar10_model hdfs://10.151.40.179:9000/core/cifar10_model"
    )
    assert "--model=resnet20 --batch_size=32" in rendered[3]
    assert "cGFzc3dvcmQ=" in rendered[1]  # the secret, filled in only when rendered
    assert all("cGFzc3dvcmQ=" not in c for c in ps.commands)


def test_hello_world_job_reads_as_openpai_wrote_it() -> None:
    path = OPENPAI / "docs__manual__cluster-user__examples__hello-world-job.yaml"
    if not path.is_file():
        missing(path)
    spec = _load(path)
    (role,) = spec.roles
    assert (spec.name, spec.pool, role.name, role.slots, role.cpu, role.memory_mb) == (
        "hello-world-job",
        "default",
        "taskrole",
        1,
        1.0,
        6500,
    )
    assert role.image == "openpai/standard:python_3.6-tensorflow_1.15.0-gpu"
    assert (role.min_failed_instances, role.min_succeeded_instances) == (1, -1)
    assert role.commands[0] == "git clone https://github.com/tensorflow/models"
    assert any(n.startswith("extras.com.microsoft.pai.runtimeplugin[0] (ssh)") for n in spec.notes)
