"""Reading OpenPAI job files (protocol v2 YAML, v1 JSON) into the native job spec."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from assay.config import (
    InvalidConfig,
    JobSpec,
    JobSpecKind,
    job_format,
    job_secret_values,
    load_job_file,
    render_commands,
    secret_values,
)

SEED_JSON = (
    '{"jobName": "tensorflow-cifar10", "image": "tensorflow/tensorflow:1.12.0-gpu-py3", '
    '"taskRoles": [{"name": "default", "taskNumber": 1, "cpuNumber": 4, "memoryMB": 8192, '
    '"gpuNumber": 1, "command": "apt update && apt install -y git && git clone '
    "https://github.com/tensorflow/models && cd models/research/slim && python "
    "download_and_convert_data.py --dataset_name=cifar10 --dataset_dir=/tmp/data && python "
    "train_image_classifier.py --dataset_name=cifar10 --dataset_dir=/tmp/data "
    '--max_number_of_steps=1000"}]}'
)


def v2(**overrides: Any) -> dict[str, Any]:
    """A small valid v2 job: one worker role of two instances; ``overrides`` replace keys."""
    job: dict[str, Any] = {
        "protocolVersion": 2,
        "name": "demo_job",
        "type": "job",
        "prerequisites": [
            {"name": "img", "type": "dockerimage", "uri": "python:3.11"},
            {"name": "cifar", "type": "data", "uri": ["https://x/a.tgz", "https://x/b.tgz"]},
            {"name": "model", "type": "output", "uri": "/shared/model"},
            {"name": "code", "type": "script", "uri": "github.com/me/code", "version": "abc"},
        ],
        "parameters": {"model": "resnet20", "batchsize": 32},
        "secrets": {"token": "s3cr3t-value"},
        "taskRoles": {
            "worker": {
                "instances": 2,
                "dockerImage": "img",
                "resourcePerInstance": {"cpu": 2, "memoryMB": 4096, "gpu": 1},
                "commands": ["python train.py --model <% $parameters.model %>"],
            }
        },
    }
    job.update(overrides)
    return job


def load(job: dict[str, Any]) -> JobSpec:
    return load_job_file(yaml.safe_dump(job, sort_keys=False), filename="job.yaml")


def problems(job: dict[str, Any] | str) -> dict[str, str]:
    text = job if isinstance(job, str) else yaml.safe_dump(job, sort_keys=False)
    with pytest.raises(InvalidConfig) as info:
        load_job_file(text)
    found: dict[str, str] = {}
    for detail in info.value.details:
        assert detail.path not in found, f"two problems at {detail.path}"
        found[detail.path] = detail.message
    return found


def worker(**changes: Any) -> dict[str, Any]:
    role = dict(v2()["taskRoles"]["worker"])
    role.update(changes)
    return role


# --- protocol v2 ---------------------------------------------------------------------------


def test_v2_job_maps_roles_resources_and_images() -> None:
    spec = load(v2(jobRetryCount=2, description="about it"))
    assert spec.kind is JobSpecKind.JOB
    assert spec.source_format == "openpai-v2"
    assert (spec.name, spec.job_retry_count, spec.description) == ("demo_job", 2, "about it")
    (role,) = spec.roles
    assert role.name == "worker"
    assert (role.instances, role.slots, role.cpu, role.memory_mb) == (2, 1, 2.0, 4096)
    assert role.image == "python:3.11"
    # Templates stay as written in the stored spec.
    assert role.commands == ["python train.py --model <% $parameters.model %>"]
    assert spec.secrets == {"token": "s3cr3t-value"}
    assert [p.name for p in spec.prerequisites] == ["img", "cifar", "model", "code"]
    assert spec.prerequisites[3].fields == {"version": "abc"}


def test_v2_roles_keep_the_order_written() -> None:
    roles = {"zeta": worker(), "alpha": worker(), "mid": worker()}
    assert [r.name for r in load(v2(taskRoles=roles)).roles] == ["zeta", "alpha", "mid"]


def test_v2_completion_defaults_and_minus_one() -> None:
    spec = load(v2())
    assert spec.roles[0].min_failed_instances == 1
    assert spec.roles[0].min_succeeded_instances is None  # all instances of the role
    completion = {"minFailedInstances": -1, "minSucceededInstances": -1}
    role = load(v2(taskRoles={"worker": worker(completion=completion)})).roles[0]
    assert (role.min_failed_instances, role.min_succeeded_instances) == (-1, -1)


@pytest.mark.parametrize("key", ["minFailedInstances", "minSucceededInstances"])
@pytest.mark.parametrize("value", [0, -2])
def test_v2_completion_counts_are_minus_one_or_at_least_one(key: str, value: int) -> None:
    job = v2(taskRoles={"worker": worker(completion={key: value})})
    assert problems(job) == {
        f"taskRoles.worker.completion.{key}": f"must be -1 or >= 1, got {value}"
    }


def test_v2_ports_are_reserved_by_label() -> None:
    resources = {"cpu": 1, "memoryMB": 512, "gpu": 0, "ports": {"ssh": 1, "http": 2}}
    role = load(v2(taskRoles={"worker": worker(resourcePerInstance=resources)})).roles[0]
    assert role.ports == {"ssh": 1, "http": 2}


def test_v2_port_counts_and_labels_are_checked() -> None:
    resources = {"cpu": 1, "memoryMB": 512, "gpu": 0, "ports": {"ssh": 0, "my-port": 1}}
    found = problems(v2(taskRoles={"worker": worker(resourcePerInstance=resources)}))
    assert found["taskRoles.worker.resourcePerInstance.ports.ssh"] == "must be >= 1, got 0"
    assert "PAI_PORT_LIST_" in found["taskRoles.worker.resourcePerInstance.ports.my-port"]


def test_v2_virtual_cluster_is_the_pool_as_named() -> None:
    assert load(v2(defaults={"virtualCluster": "default"})).pool == "default"
    assert load(v2(defaults={"virtualCluster": "gpu-a100"})).pool == "gpu-a100"
    assert load(v2()).pool == ""  # the master's default pool


def test_v2_deployment_prepends_pre_and_appends_post_commands() -> None:
    deployments = [
        {"name": "other", "taskRoles": {"worker": {"preCommands": ["echo other"]}}},
        {
            "name": "prod",
            "taskRoles": {
                "worker": {
                    "preCommands": ["wget <% $data.uri[0] %>", "cd x"],
                    "postCommands": ["cp out <% $output.uri %>"],
                }
            },
        },
    ]
    role = worker(data="cifar", output="model", commands=["train"])
    spec = load(
        v2(taskRoles={"worker": role}, deployments=deployments, defaults={"deployment": "prod"})
    )
    assert spec.roles[0].commands == [
        "wget <% $data.uri[0] %>",
        "cd x",
        "train",
        "cp out <% $output.uri %>",
    ]
    assert render_commands(spec, "worker") == [
        "wget https://x/a.tgz",
        "cd x",
        "train",
        "cp out /shared/model",
    ]


def test_v2_deployments_without_a_default_apply_none_and_say_so() -> None:
    deployments = [{"name": "prod", "taskRoles": {"worker": {"preCommands": ["setup"]}}}]
    spec = load(v2(deployments=deployments))
    assert spec.roles[0].commands == ["python train.py --model <% $parameters.model %>"]
    assert any(n.startswith("deployments: none is applied") for n in spec.notes)


def test_v2_deployment_naming_an_unknown_role_or_default_is_refused() -> None:
    deployments = [{"name": "prod", "taskRoles": {"ghost": {"preCommands": ["x"]}}}]
    found = problems(v2(deployments=deployments, defaults={"deployment": "staging"}))
    assert found == {
        "deployments[0].taskRoles.ghost": "names no task role; the task roles are: worker",
        "defaults.deployment": "names no deployment; the deployments are: prod",
    }


def test_render_commands_fills_every_kind_of_template() -> None:
    role = worker(
        data="cifar",
        output="model",
        script="code",
        commands=[
            "echo <% $parameters.model %> <% $parameters.batchsize %>",
            "git clone https://me:<% $secrets.token %>@<% $script.uri %> <% $script.name %>",
            "git checkout <% $script.version %>",
            "wget <% $data.uri[1] %> -P data_<% $data.name %>",
            "cp -r out <% $output.uri %>  # no template: <%not one",
            "echo '<% $parameters %>'",
        ],
    )
    spec = load(v2(taskRoles={"worker": role}))
    assert render_commands(spec, "worker") == [
        "echo resnet20 32",
        "git clone https://me:s3cr3t-value@github.com/me/code code",
        "git checkout abc",
        "wget https://x/b.tgz -P data_cifar",
        "cp -r out /shared/model  # no template: <%not one",
        """echo '{"model": "resnet20", "batchsize": 32}'""",
    ]
    # The secret is in no stored command, and the masking functions know it.
    assert "s3cr3t-value" not in json.dumps(spec.model_dump(exclude={"secrets"}))
    assert job_secret_values(spec) == secret_values(spec) == ["s3cr3t-value"]


def test_every_template_problem_is_reported_with_its_command_path() -> None:
    role = worker(
        data="cifar",
        commands=[
            "echo <% $parameters.model %>",
            "echo <% $parameters.lr %>",
            "echo <% $secrets.password %> <% $data.uri[5] %> <% $data.size %>",
            "echo <% $output.uri %> <% $job.name %> <% parameters.x %>",
        ],
    )
    with pytest.raises(InvalidConfig) as info:
        load(v2(taskRoles={"worker": role}))
    got = [str(d) for d in info.value.details]
    assert got == [
        "taskRoles.worker.commands[1]: <% $parameters.lr %> names no parameter; "
        "parameters has: model, batchsize",
        "taskRoles.worker.commands[2]: <% $secrets.password %> names no secret; secrets has: token",
        "taskRoles.worker.commands[2]: <% $data.uri[5] %>: uri has 2 items",
        "taskRoles.worker.commands[2]: <% $data.size %>: prerequisite cifar has no size; "
        "it has: name, type, uri",
        "taskRoles.worker.commands[3]: <% $output.uri %> needs the task role's output key, "
        "naming an output prerequisite; taskRoles.worker has none",
        "taskRoles.worker.commands[3]: <% $job.name %> names $job; templates name "
        "$parameters, $secrets, $data, $output or $script",
        "taskRoles.worker.commands[3]: <% parameters.x %> is not a template assay can fill "
        "in; write <% $parameters.NAME %>, <% $secrets.NAME %> or <% $data.FIELD %>",
    ]


def test_templates_in_deployment_commands_use_their_roles_scope() -> None:
    deployments = [{"name": "d", "taskRoles": {"worker": {"postCommands": ["<% $script.uri %>"]}}}]
    found = problems(v2(deployments=deployments, defaults={"deployment": "d"}))
    assert list(found) == ["deployments[0].taskRoles.worker.postCommands[0]"]
    assert (
        "needs the task role's script key"
        in found["deployments[0].taskRoles.worker.postCommands[0]"]
    )


def test_v2_every_problem_at_once_with_paths() -> None:
    role = worker(
        instances=0,
        dockerImage="missing",
        data="model",
        resourcePerInstance={"cpu": 1, "memoryMB": "8G", "gpu": -1},
        comands=["x"],
    )
    job = v2(name="bad name!", type="component", taskRoles={"worker": role, "ps-server": worker()})
    found = problems(job)
    assert found == {
        "name": 'must match ^[a-zA-Z0-9_-]+$ (letters, digits, _ and -), got "bad name!"',
        "type": "must be one of 'job', got \"component\"",
        "taskRoles.worker.instances": "must be >= 1, got 0",
        "taskRoles.worker.resourcePerInstance.memoryMB": 'must be an integer, got "8G"',
        "taskRoles.worker.resourcePerInstance.gpu": "must be >= 0, got -1",
        "taskRoles.worker.comands": "unknown key (did you mean commands?)",
        "taskRoles.ps-server": "task role names must match ^[A-Za-z_][A-Za-z0-9_]*$ (a letter "
        "or _, then letters, digits or _: it becomes part of variable names such as "
        "PAI_HOST_IP_<role>_0)",
        "taskRoles.worker.dockerImage": 'names no prerequisite ("missing"); the dockerimage '
        "prerequisites are: img",
        "taskRoles.worker.data": 'must name a data prerequisite, but model is "output"; the '
        "data prerequisites are: cifar",
    }


def test_v2_keys_are_spelled_as_openpai_spells_them() -> None:
    role = worker(resourcePerInstance={"cpu": 1, "memory_mb": 1, "memoryMB": 1, "gpu": 0})
    found = problems(v2(taskRoles={"worker": role}))
    assert found == {
        "taskRoles.worker.resourcePerInstance.memory_mb": "unknown key (did you mean memoryMB?)"
    }


def test_v2_prerequisite_rules() -> None:
    prerequisites = [
        {"name": "img", "type": "dockerimage", "uri": ["a", "b"]},
        {"name": "img", "type": "data", "uri": "c", "auth": {"username": "u"}},
        {"name": "j", "type": "job", "uri": "d"},
    ]
    found = problems(v2(prerequisites=prerequisites, taskRoles={"worker": worker()}))
    assert found["prerequisites[0].uri"] == "must be a string: only a data prerequisite lists uris"
    assert found["prerequisites[1].auth"] == "only a dockerimage prerequisite may have auth"
    assert found["prerequisites[1].name"] == 'another prerequisite is named "img"'
    assert found["prerequisites[2].type"].startswith("must be one of")


def test_v2_protocol_version_must_be_two() -> None:
    found = problems(v2(protocolVersion=3))
    assert found == {"protocolVersion": "must be 2 (OpenPAI's job protocol v2), got 3"}


def test_v2_without_protocol_version_is_still_read_as_v2() -> None:
    job = v2()
    del job["protocolVersion"]
    assert problems(job) == {"protocolVersion": "required"}


# --- notes and refusals ---------------------------------------------------------------------


def test_placement_hints_and_container_options_are_accepted_with_notes() -> None:
    role = worker(extraContainerOptions={"shmMB": 64, "infiniband": True})
    extras = {
        "com.microsoft.pai.runtimeplugin": [
            {"plugin": "ssh", "parameters": {"jobssh": True, "userssh": {}}}
        ],
        "hivedScheduler": {"taskRoles": {"worker": {"skuNum": 1, "skuType": None}}},
        "gangAllocation": False,
        "submitFrom": "webportal",
    }
    spec = load(v2(taskRoles={"worker": role}, extras=extras))
    heads = [n.split(":")[0] for n in spec.notes]
    assert heads == [
        "taskRoles.*.dockerImage (python",
        "taskRoles.worker.extraContainerOptions.shmMB (64)",
        "taskRoles.worker.extraContainerOptions.infiniband",
        "extras.com.microsoft.pai.runtimeplugin[0] (ssh)",
        "extras.hivedScheduler",
        "extras.gangAllocation",
    ]
    assert "PAI_HOST_IP_" in spec.notes[3]


@pytest.mark.parametrize(
    ("extras", "path", "words"),
    [
        (
            {
                "com.microsoft.pai.runtimeplugin": [
                    {"plugin": "teamwise_storage", "parameters": {"storageConfigNames": ["nfs"]}}
                ]
            },
            "extras.com.microsoft.pai.runtimeplugin[0]",
            "teamwise_storage mounts the team's storage (nfs)",
        ),
        (
            {
                "com.microsoft.pai.runtimeplugin": [
                    {"plugin": "ssh", "parameters": {"jobssh": True, "sshbarrier": True}}
                ]
            },
            "extras.com.microsoft.pai.runtimeplugin[0].parameters.sshbarrier",
            "assay runs no SSH server in instances",
        ),
        (
            {"com.microsoft.pai.runtimeplugin": [{"plugin": "tensorboard", "parameters": {}}]},
            "extras.com.microsoft.pai.runtimeplugin[0]",
            "starts TensorBoard",
        ),
        (
            {"com.microsoft.pai.runtimeplugin": [{"plugin": "cmd"}]},
            "extras.com.microsoft.pai.runtimeplugin[0].plugin",
            'runtime plugin "cmd" is not run by assay',
        ),
        ({"virtualGroup": "x"}, "extras.virtualGroup", "unknown extras key"),
    ],
)
def test_features_that_cannot_work_are_refused_naming_them(
    extras: dict[str, Any], path: str, words: str
) -> None:
    found = problems(v2(extras=extras))
    assert list(found) == [path]
    assert words in found[path]


# --- v1 JSON ---------------------------------------------------------------------------------


def test_seed_hello_world_json_loads_verbatim() -> None:
    assert job_format(json.loads(SEED_JSON)) == "openpai-v1"
    spec = load_job_file(SEED_JSON)
    assert (spec.kind, spec.source_format, spec.name) == (
        JobSpecKind.JOB,
        "openpai-v1",
        "tensorflow-cifar10",
    )
    assert spec.image == "tensorflow/tensorflow:1.12.0-gpu-py3"
    (role,) = spec.roles
    assert (role.name, role.instances, role.cpu, role.memory_mb, role.slots) == (
        "default",
        1,
        4.0,
        8192,
        1,
    )
    assert role.image == spec.image
    assert role.commands == [json.loads(SEED_JSON)["taskRoles"][0]["command"]]
    # v1 left both counts null: fail at the first failure, succeed when every task is done.
    assert (role.min_failed_instances, role.min_succeeded_instances) == (1, -1)
    assert render_commands(spec, "default") == role.commands


def test_v1_tab_indented_json_loads() -> None:
    assert load_job_file(json.dumps(json.loads(SEED_JSON), indent="\t")).name == (
        "tensorflow-cifar10"
    )


def v1(**overrides: Any) -> dict[str, Any]:
    job: dict[str, Any] = json.loads(SEED_JSON)
    job.update(overrides)
    return job


def v1_role(**changes: Any) -> dict[str, Any]:
    role = dict(json.loads(SEED_JSON)["taskRoles"][0])
    role.update(changes)
    return role


def test_v1_maps_envs_retries_pool_ports_and_counts() -> None:
    roles = [
        v1_role(
            name="ps",
            taskNumber=2,
            portList=[{"label": "http", "beginAt": 0, "portNumber": 2}],
            minFailedTaskCount=None,
            minSucceededTaskCount=1,
        ),
        v1_role(name="worker", command="python w.py", minFailedTaskCount=2),
    ]
    job = v1(
        taskRoles=roles,
        jobEnvs={"batch_size": 32, "job_model": "resnet20", "flag": True},
        retryCount=3,
        virtualCluster="vc1",
        dataDir="hdfs://nn:9000/data",
        outputDir="/shared/out",
    )
    spec = load_job_file(json.dumps(job))
    assert spec.env == {
        "batch_size": "32",
        "job_model": "resnet20",
        "flag": "true",
        "PAI_DATA_DIR": "hdfs://nn:9000/data",
        "PAI_OUTPUT_DIR": "/shared/out",
    }
    assert (spec.job_retry_count, spec.pool) == (3, "vc1")
    ps, w = spec.roles
    assert (ps.instances, ps.ports) == (2, {"http": 2})
    assert (ps.min_failed_instances, ps.min_succeeded_instances) == (-1, 1)
    assert (w.commands, w.min_failed_instances) == (["python w.py"], 2)


def test_v1_every_problem_at_once_with_paths() -> None:
    roles = [
        v1_role(name="ps.server", taskNumber=0, memoryMB=50, command=" "),
        v1_role(portList=[{"label": "http", "beginAt": 8080, "portNumber": 1}]),
        v1_role(),
    ]
    job = v1(
        taskRoles=roles,
        codeDir="hdfs://nn/code",
        dataDir="$PAI_DEFAULT_FS_URI/data",
        killAllOnCompletedTaskNumber=1,
        jobNmae="typo",
    )
    found = problems(json.dumps(job))
    assert set(found) == {
        "taskRoles[0].taskNumber",
        "taskRoles[0].memoryMB",
        "taskRoles[0].command",
        "taskRoles[0].name",
        "taskRoles[1].portList[0].beginAt",
        "taskRoles[2].name",
        "codeDir",
        "dataDir",
        "killAllOnCompletedTaskNumber",
        "jobNmae",
    }
    assert found["taskRoles[0].memoryMB"] == "must be >= 100, got 50"
    assert found["taskRoles[0].command"].startswith("must not be empty")
    assert "fixed first port (8080) cannot be honoured" in found["taskRoles[1].portList[0].beginAt"]
    assert found["taskRoles[2].name"] == "another task role is named default"
    assert found["jobNmae"] == "unknown key (did you mean jobName?)"
    assert "HDFS" in found["codeDir"]


def test_v1_runtime_hints_are_accepted_with_notes() -> None:
    job = v1(
        taskRoles=[v1_role(shmMB=1024)],
        gpuType="K80",
        authFile="hdfs://nn/auth",
        jobEnvs={"isDebug": True, "paiAzRDMA": True},
        extras={},
    )
    notes = load_job_file(json.dumps(job)).notes
    assert [n.split(" ")[0].rstrip(":") for n in notes] == [
        "image",
        "authFile",
        "gpuType",
        "taskRoles[0].shmMB",
        "jobEnvs.paiAzRDMA",
        "jobEnvs.isDebug",
    ]


# --- detection -------------------------------------------------------------------------------


def test_a_file_of_no_known_format_is_refused_naming_the_identifying_keys() -> None:
    found = problems("name: x\ncommands: [a]\n")
    message = found[""]
    for key in ("protocolVersion", "jobName", "taskRoles", "entrypoint", "name, commands"):
        assert key in message


def test_an_experiment_config_is_pointed_to_experiments() -> None:
    found = problems("entrypoint: python3 train.py\nsearcher: {name: single, metric: loss}\n")
    assert "experiment config" in found["searcher"]


def test_a_determined_task_config_is_delegated() -> None:
    spec = load_job_file('entrypoint: ["echo", "task ran"]\n')
    assert (spec.kind, spec.source_format) == (JobSpecKind.GENERIC, "determined-task")
    assert spec.roles[0].commands == ["echo 'task ran'"]
    spec = load_job_file("entrypoint: ls\n", task_kind=JobSpecKind.COMMAND)
    assert spec.kind is JobSpecKind.COMMAND


def test_render_commands_leaves_other_formats_as_written() -> None:
    spec = load_job_file("entrypoint: echo '<% $parameters.x %>'\n")
    assert render_commands(spec, "task") == ["echo '<% $parameters.x %>'"]
    with pytest.raises(KeyError):
        render_commands(spec, "worker")


def test_render_commands_refuses_a_template_that_names_nothing() -> None:
    spec = load(v2())
    broken = spec.model_copy(update={"parameters": {}})
    with pytest.raises(InvalidConfig) as info:
        render_commands(broken, "worker")
    assert info.value.details[0].path == "taskRoles.worker.commands[0]"


def test_an_unclosed_template_is_refused_at_its_command_path() -> None:
    role = worker(commands=["echo <% $parameters.model %>", "echo <% $parameters.model"])
    assert problems(v2(taskRoles={"worker": role})) == {
        "taskRoles.worker.commands[1]": "template '<% $parameters.model' is not closed: "
        "end it with %>"
    }


@pytest.mark.parametrize("text", ["", "  \n\n", b""])
def test_an_empty_job_file_is_refused_as_empty(text: str | bytes) -> None:
    with pytest.raises(InvalidConfig) as info:
        load_job_file(text, filename="job.yaml")
    assert str(info.value).startswith("job.yaml is empty: expected an OpenPAI job")


def test_a_json_syntax_error_is_reported_as_json_with_line_and_column() -> None:
    text = '{\n  "jobName": "x",\n  "taskRoles": [\n}\n'
    for filename in ("job.json", ""):
        with pytest.raises(InvalidConfig) as info:
            load_job_file(text, filename=filename)
        message = str(info.value)
        assert message.startswith("invalid JSON in "), message
        assert "at line 4, column 1: " in message and "YAML" not in message


def test_more_successes_asked_than_instances_is_accepted_with_a_note() -> None:
    role = worker(completion={"minSucceededInstances": 5})
    notes = load(v2(taskRoles={"worker": role})).notes
    (note,) = [n for n in notes if "minSucceededInstances" in n]
    assert note.startswith("taskRoles.worker.completion.minSucceededInstances (5) is more than")
    assert "2 instances" in note and "every instance has ended" in note
    fitting = worker(completion={"minSucceededInstances": 2})
    assert not [n for n in load(v2(taskRoles={"worker": fitting})).notes if "minSucc" in n]
    v1 = json.loads(SEED_JSON)
    v1["taskRoles"][0]["minSucceededTaskCount"] = 3
    (v1_note,) = [n for n in load_job_file(json.dumps(v1)).notes if "minSucceeded" in n]
    assert v1_note.startswith("taskRoles[0].minSucceededTaskCount (3) is more than the role's 1")
