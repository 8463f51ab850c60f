"""The container command an agent with a runtime builds for an allocation that names an image."""

from __future__ import annotations

import base64
import json
import re
import stat
import subprocess
from pathlib import Path

import pytest

from assay.agent._containers import (
    AGENT_LABEL,
    DEFAULT_SHM_SIZE,
    HARNESS_ROOT,
    ContainerRuntime,
    container_name,
    container_pythonpath,
    in_bash,
    owner,
    storage_dirs,
    write_registry_auth,
)
from assay.protocol import Container, Mount, RegistryAuth, Slot


def _argv(runtime: str, container: Container, **kwargs: object) -> list[str]:
    defaults: dict[str, object] = {
        "name": "assay-7.1",
        "owned_by": "agent-1:/work",
        "container": container,
        "workdir": Path("/work/alloc/code"),
        "shared": ["/work/alloc", "/ckpt"],
        "env_names": ["ASSAY_TRIAL_ID", "SECRET_TOKEN"],
        "gpus": [],
        "auth_dir": None,
        "command": ["/bin/sh", "-c", "exec python3 train.py"],
    }
    defaults.update(kwargs)
    return ContainerRuntime(runtime).run_argv(**defaults)  # type: ignore[arg-type]


def _pairs(argv: list[str], flag: str) -> list[str]:
    return [argv[i + 1] for i, arg in enumerate(argv) if arg == flag]


def test_the_container_shares_the_hosts_network_and_is_removed_and_labelled_for_its_agent() -> None:
    argv = _argv("podman", Container(image="localhost/train:1"))
    assert argv[:2] == ["podman", "run"]
    assert {"--rm", "--init"} <= set(argv)
    assert _pairs(argv, "--network") == ["host"]
    assert _pairs(argv, "--name") == ["assay-7.1"]
    assert _pairs(argv, "--label") == [f"{AGENT_LABEL}=agent-1:/work"]
    assert _pairs(argv, "--workdir") == ["/work/alloc/code"]
    # The image, then the command, end the line.
    assert argv[-4:] == ["localhost/train:1", "/bin/sh", "-c", "exec python3 train.py"]


def test_variables_are_named_never_given_their_values_on_the_command_line() -> None:
    argv = _argv("podman", Container(image="img"))
    assert _pairs(argv, "--env") == ["ASSAY_TRIAL_ID", "SECRET_TOKEN"]
    assert not any("=" in value for value in _pairs(argv, "--env"))


def test_the_harness_is_mounted_read_only_and_shared_directories_at_their_own_paths() -> None:
    mounts = [
        Mount("/data", "/mnt/data", read_only=True),
        Mount("/scratch", "scratch", propagation="rshared"),
    ]
    argv = _argv("podman", Container(image="img", mounts=mounts))
    found = _pairs(argv, "--mount")
    harness = f"destination={HARNESS_ROOT}/assay,readonly=true"
    assert found[0].startswith("type=bind,source=") and found[0].endswith(harness)
    assert Path(found[0].split(",")[1].removeprefix("source="), "core").is_dir()
    assert "type=bind,source=/work/alloc,destination=/work/alloc" in found
    assert "type=bind,source=/ckpt,destination=/ckpt" in found
    assert "type=bind,source=/data,destination=/mnt/data,readonly=true" in found
    # A relative container path is under the working directory, as Determined has it.
    assert (
        "type=bind,source=/scratch,destination=/work/alloc/code/scratch,bind-propagation=rshared"
        in found
    )
    assert "--volume" not in argv


def test_the_trial_gains_no_privileges_and_gets_a_dev_shm_fit_for_data_loaders() -> None:
    argv = _argv("podman", Container(image="img"))
    assert _pairs(argv, "--security-opt") == ["no-new-privileges"]
    assert _pairs(argv, "--shm-size") == [str(DEFAULT_SHM_SIZE)]
    assert _pairs(_argv("docker", Container(image="img", shm_size=2**30)), "--shm-size") == [
        str(2**30)
    ]


@pytest.mark.parametrize(("force", "policy"), [(False, "missing"), (True, "always")])
def test_force_pull_image_pulls_even_an_image_the_agent_has(force: bool, policy: str) -> None:
    assert _pairs(_argv("podman", Container(image="img", force_pull=force)), "--pull") == [policy]


def test_gpus_pass_through_by_cdi_name_on_podman_and_by_gpus_on_docker() -> None:
    gpus = [Slot("0", "cuda", uuid="GPU-aaa"), Slot("1", "cuda")]
    podman = _argv("podman", Container(image="img"), gpus=gpus)
    assert _pairs(podman, "--device") == ["nvidia.com/gpu=GPU-aaa", "nvidia.com/gpu=1"]
    docker = _argv("docker", Container(image="img"), gpus=gpus)
    assert _pairs(docker, "--gpus") == ['"device=GPU-aaa,1"']
    cpu_only = _argv("podman", Container(image="img"), gpus=[Slot("0", "cpu")])
    assert "--device" not in cpu_only and "--gpus" not in cpu_only
    rocm = _argv("podman", Container(image="img"), gpus=[Slot("0", "rocm")])
    assert _pairs(rocm, "--device") == ["/dev/kfd", "/dev/dri"]


def test_registry_credentials_go_to_a_private_auth_file_the_runtime_reads(tmp_path: Path) -> None:
    container = Container(
        image="registry.example:5000/team/train:2",
        auth=RegistryAuth(username="u", password="p@ss"),
    )
    directory = write_registry_auth(container, tmp_path / "registry")
    assert directory is not None
    path = directory / "config.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    auths = json.loads(path.read_text())["auths"]
    assert base64.b64decode(auths["registry.example:5000"]["auth"]).decode() == "u:p@ss"
    podman = _argv("podman", container, auth_dir=directory)
    assert _pairs(podman, "--authfile") == [str(path)]
    docker = _argv("docker", container, auth_dir=directory)
    assert docker[:3] == ["docker", "--config", str(directory)]
    assert "p@ss" not in " ".join(podman + docker)


def test_an_image_without_a_registry_host_takes_docker_hubs_credentials(tmp_path: Path) -> None:
    container = Container(image="team/train:2", auth=RegistryAuth(username="u", password="p"))
    directory = write_registry_auth(container, tmp_path)
    assert directory is not None
    assert list(json.loads((directory / "config.json").read_text())["auths"]) == ["docker.io"]
    assert write_registry_auth(Container(image="team/train:2"), tmp_path / "none") is None


def test_the_containers_pythonpath_finds_the_shims_the_harness_then_the_experiments() -> None:
    path = container_pythonpath("/code/lib:/other")
    parts = path.split(":")
    assert parts[0] == f"{HARNESS_ROOT}/assay/compat/shims"
    assert parts[1:] == [HARNESS_ROOT, "/code/lib", "/other"]
    assert container_pythonpath(None) == ":".join(parts[:2])


def test_container_names_hold_only_what_runtimes_accept_and_never_repeat() -> None:
    assert re.fullmatch(r"assay-12\.3-[0-9a-f]{8}", container_name("12.3"))
    assert re.fullmatch(r"assay-task-5-a-b-[0-9a-f]{8}", container_name("task:5/a b"))
    # Agents of two clusters on one host both run an allocation 1.1.
    assert container_name("1.1") != container_name("1.1")


def test_an_agents_containers_are_told_from_those_of_an_agent_with_its_id_elsewhere() -> None:
    here, there = Path("/a/agents/agent-1"), Path("/b/agents/agent-1")
    assert owner("agent-1", here) != owner("agent-1", there)


def test_an_unknown_runtime_or_a_missing_command_is_named() -> None:
    with pytest.raises(ValueError, match="use one of podman, docker"):
        ContainerRuntime("containerd")
    runtime = ContainerRuntime("podman")
    runtime.command = "no-such-runtime-command"
    assert runtime.probe() == "there is no no-such-runtime-command command on this host's PATH"


def test_checkpoint_directories_a_container_must_see_are_those_of_local_storage(
    tmp_path: Path,
) -> None:
    shared = tmp_path / "shared"
    assert storage_dirs({"type": "shared_fs", "host_path": str(shared)}) == [str(shared)]
    assert shared.is_dir()
    assert storage_dirs({"type": "directory", "container_path": "/ckpt/x"}) == ["/ckpt/x"]
    assert storage_dirs({"type": "s3", "bucket": "b"}) == []
    assert storage_dirs(None) == []


@pytest.mark.parametrize("with_bash", [True, False])
def test_the_startup_script_runs_in_bash_where_the_image_has_it(
    with_bash: bool, tmp_path: Path
) -> None:
    script = 'echo "$0:${BASH_VERSION:+bash}"'
    path = "/usr/bin:/bin" if with_bash else str(tmp_path)
    if not with_bash:
        (tmp_path / "sh").symlink_to("/bin/sh")
    done = subprocess.run(
        in_bash(script), env={"PATH": path}, capture_output=True, text=True, check=True
    )
    shell = done.stdout.strip()
    assert shell.endswith(":bash") if with_bash else shell == "/bin/sh:"
