"""The master's and the agents' container images (deploy/images/), built with podman from the
release wheel and its wheelhouse, as `make images` builds them, on the locally made Debian base
(no registry is reachable here; the Containerfiles name their usual bases). A master container
and an agent container then run an experiment to the end; the images run as a user of their
own, carry no pip, and say the commit they were built from."""

from __future__ import annotations

import contextlib
import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from assay.client import Client
from assay.context import pack_context
from tests.containers import ensure_test_image, podman
from tests.e2e.conftest import need
from tests.integration.cluster import CONTEXTS, free_port, wait_for
from tests.integration.test_release import UI_INDEX, head_commit

# The first test's setup builds the wheel, its wheelhouse and three images (and, on a machine
# that has none yet, the Debian base with debootstrap): 195 s alone, more beside two other test
# files, past the suite's 300 s per test.
pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[2]
IMAGES = ROOT / "deploy" / "images"


def _run(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(args, capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done


@pytest.fixture(scope="module")
def images(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The three images, built as `make images` builds them, with the test image as base."""
    need(None if UI_INDEX.is_file() else "the web UI is not built (make webui)")
    base = ensure_test_image()
    dist = tmp_path_factory.mktemp("dist")
    _run(
        sys.executable, "-m", "build", "--no-isolation", "--wheel", "--outdir", str(dist), str(ROOT)
    )
    (wheel,) = dist.glob("assay-*.whl")
    _run(
        sys.executable, "-m", "pip", "download", "--quiet", "--only-binary=:all:",
        "--dest", str(dist / "wheelhouse"), "pip", f"{wheel}[kubernetes]",
    )  # fmt: skip
    tag = secrets.token_hex(4)
    built: dict[str, str] = {}
    try:
        for name, extra in (
            ("master", []),
            ("agent", []),
            # The CUDA variant on the same base: its Containerfile builds and its agent runs (the
            # GPU itself is the device test's; its usual base needs Python 3.12's wheelhouse).
            ("agent-cuda", ["--build-arg", "WHEELHOUSE=wheelhouse"]),
        ):
            image = f"localhost/assay-{name}-test:{tag}"
            done = podman(
                "build", "--file", str(IMAGES / f"{name}.Containerfile"),
                "--build-arg", f"BASE={base}", *extra, "--tag", image, str(dist),
                timeout=900,
            )  # fmt: skip
            assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
            built[name] = image
        yield built
    finally:
        for image in built.values():
            podman("rmi", "--force", image)


def test_each_image_runs_as_its_own_user_without_pip_and_knows_its_commit(
    images: dict[str, str],
) -> None:
    for name, image in images.items():
        user = podman("image", "inspect", "--format", "{{.Config.User}}", image)
        assert user.stdout.strip() == "assay", (name, user.stdout)
        version = podman("run", "--rm", "--entrypoint", "assay", image, "--version")
        assert version.returncode == 0, version.stderr
        assert version.stdout.strip().endswith(f"(commit {head_commit()[:12]})"), version.stdout
        # No build tools in what ships: pip installed the package from its own wheel, in the
        # build stage only.
        tools = podman(
            "run", "--rm", "--entrypoint", "sh", image, "-c",
            "id -u; command -v pip pip3 gcc; python3 -c 'import pip' 2>/dev/null && echo pip",
        )  # fmt: skip
        lines = tools.stdout.split()
        assert lines[0] != "0" and lines[1:] == [], (name, tools.stdout)


@contextlib.contextmanager
def _container(*args: str) -> Iterator[str]:
    started = podman("run", "--detach", "--network", "host", *args)
    assert started.returncode == 0, started.stderr
    cid = started.stdout.strip()
    try:
        yield cid
    finally:
        logs = podman("logs", cid)
        podman("rm", "--force", "--time", "2", cid)
        print(f"--- container {args[-1]}:\n{logs.stdout[-3000:]}{logs.stderr[-3000:]}")


def test_a_master_and_an_agent_in_containers_run_an_experiment_to_the_end(
    images: dict[str, str], tmp_path: Path
) -> None:
    port = free_port()
    token, password = secrets.token_hex(16), secrets.token_hex(12)
    # Checkpoints on a volume both containers mount at one path, owned by the images' user.
    shared = tmp_path / "checkpoints"
    shared.mkdir()
    if os.geteuid() == 0:
        os.chown(shared, 10001, 10001)
    else:
        shared.chmod(0o777)
    config = tmp_path / "etc"
    config.mkdir()
    (config / "master.yaml").write_text(
        yaml.safe_dump({"checkpoint_storage": {"type": "shared_fs", "host_path": "/checkpoints"}})
    )
    secrets_env = ["--env", f"ASSAY_AGENT_TOKEN={token}"]
    with (
        _container(
            *secrets_env, "--env", f"ASSAY_ADMIN_PASSWORD={password}",
            "--volume", f"{config}:/etc/assay:ro", "--volume", f"{shared}:/checkpoints",
            images["master"], "--port", str(port), "--config", "/etc/assay/master.yaml",
        ),
        _container(
            *secrets_env, "--volume", f"{shared}:/checkpoints",
            images["agent"], "--master", f"http://127.0.0.1:{port}", "--slots", "1",
            "--id", "in-a-container",
        ),
    ):  # fmt: skip
        url = f"http://127.0.0.1:{port}"
        wait_for("the master container to answer", lambda: _answers(url), timeout=120)
        client = Client(url, token=Client(url).login("admin", password).token, timeout=30)
        wait_for(
            "the agent container to join",
            lambda: any(a.connected for a in client.agents()),
            timeout=120,
        )
        assert client.info().commit == head_commit()
        experiment = {
            "name": "in-images",
            "entrypoint": "python3 train.py",
            "hyperparameters": {"step_seconds": 0.01, "checkpoint_every": 10},
            "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 30}},
            "max_restarts": 0,
        }
        context = pack_context(CONTEXTS / "counter").data
        created = client.create_experiment(yaml.safe_dump(experiment), context)
        wait_for(
            "the experiment to complete",
            lambda: client.experiment(created.id).state in ("COMPLETED", "ERROR"),
            timeout=180,
        )
        (trial,) = client.trials(created.id)
        shown = client.experiment(created.id)
        logs = "\n".join(e.line for e in client.logs(trial.id))
        assert shown.state == "COMPLETED", f"{shown.message}\n{logs[-3000:]}"
        assert trial.steps_completed == 30
        assert client.trial_checkpoints(trial.id), "a checkpoint on the shared volume"
        assert any(shared.rglob("state.json")), "written by the trial in the agent container"


def _answers(url: str) -> bool:
    try:
        Client(url, timeout=5).info()
    except Exception:
        return False
    return True
