"""Podman for tests: its settings for these machines, and an image with a Python built locally.

No container registry is reachable, so the image is a minimal Debian root filesystem with
``python3`` made by ``debootstrap`` and imported into podman's own storage, where it stays for
the next run on the same machine (building it again takes minutes and deb.debian.org): with the
image made from it for shells (``python`` and OpenSSH's server added), the things a test run
keeps, named in the README, which ``make clean`` removes. It holds
``/etc/assay-test-image``, which no host has: a process that reads it runs in the container.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

CONTAINERS_CONF = Path(__file__).resolve().parent / "containers.conf"
IMAGE = "localhost/assay-test-python:1"
MARKER = "/etc/assay-test-image"
MARKER_TEXT = "inside the assay test image"
MIRROR = "http://deb.debian.org/debian"


def podman_env() -> dict[str, str]:
    return {**os.environ, "CONTAINERS_CONF": str(CONTAINERS_CONF)}


def podman(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["podman", *args],
        env=podman_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _unavailable(why: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"podman must run containers under CI: {why}")
    pytest.skip(why)


@contextlib.contextmanager
def _one_build() -> Iterator[None]:
    """One image build at a time, whichever test process asks first."""
    with open(Path(tempfile.gettempdir()) / "assay-test-image.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


SSHD_IMAGE = "localhost/assay-test-sshd:1"
"""The test image with OpenSSH's server and ``python`` (Debian's ``python-is-python3``), for
shells in containers; made from the test image once per machine and kept, as it is."""
_SSHD_IMAGE_FILE = """FROM {base}
RUN apt-get update -q \\
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \\
      openssh-server python-is-python3 \\
 && rm -rf /var/lib/apt/lists/* /etc/ssh/ssh_host_*
"""


def ensure_sshd_image() -> str:
    """:data:`SSHD_IMAGE`, built from the test image first if podman lacks it (apt-get from
    Debian's mirror, as the test image's debootstrap does: some seconds, once)."""
    base = ensure_test_image()
    with _one_build():
        if podman("image", "exists", SSHD_IMAGE).returncode == 0:
            return SSHD_IMAGE
        build = Path(tempfile.mkdtemp(prefix="assay-test-sshd-"))
        try:
            (build / "Containerfile").write_text(_SSHD_IMAGE_FILE.format(base=base))
            built = podman(
                "build", "--network", "host", "--tag", SSHD_IMAGE, str(build), timeout=600
            )
        finally:
            shutil.rmtree(build, ignore_errors=True)
        if built.returncode != 0:
            _unavailable(
                f"could not add OpenSSH's server to the test image: {built.stderr[-2000:]}"
            )
    return SSHD_IMAGE


def ensure_test_image() -> str:
    """The test image's name, built first if this machine's podman does not have it. Skips
    (fails under ``CI=true``) when podman or debootstrap is missing or cannot run."""
    for command in ("podman", "debootstrap"):
        if shutil.which(command) is None:
            _unavailable(f"no {command} command (make test installs it with apt)")
    with _one_build():
        if podman("image", "exists", IMAGE).returncode == 0:
            return IMAGE
        root = Path(tempfile.mkdtemp(prefix="assay-test-image-"))
        try:
            built = subprocess.run(
                ["debootstrap", "--variant=minbase", "--include=python3", "bookworm", str(root),
                 MIRROR],
                capture_output=True, text=True, timeout=900, check=False,
            )  # fmt: skip
            if built.returncode != 0:
                _unavailable(f"debootstrap failed: {built.stdout[-2000:]}{built.stderr[-2000:]}")
            (root / MARKER.lstrip("/")).write_text(MARKER_TEXT + "\n")
            tar = subprocess.Popen(["tar", "-C", str(root), "-c", "."], stdout=subprocess.PIPE)
            imported = subprocess.run(
                ["podman", "import", "-", IMAGE],
                stdin=tar.stdout,
                env=podman_env(),
                capture_output=True,
                text=True,
                timeout=600,
                check=False,
            )
            tar.wait()
            if imported.returncode != 0:
                _unavailable(f"podman import failed: {imported.stderr.strip()}")
        finally:
            shutil.rmtree(root, ignore_errors=True)
    ran = podman("run", "--rm", IMAGE, "cat", MARKER)
    if ran.returncode != 0:
        _unavailable(f"podman cannot run a container here: {ran.stderr.strip()}")
    return IMAGE


def containers_of(agent_id: str, home: Path) -> list[str]:
    """Every container (running or not) that the agent with ``--home home`` started and that
    is still there."""
    from assay.agent._containers import AGENT_LABEL, owner

    mine = owner(agent_id, (home / "agents" / agent_id).resolve())
    found = podman("ps", "--all", "--quiet", "--filter", f"label={AGENT_LABEL}={mine}")
    assert found.returncode == 0, found.stderr
    return found.stdout.split()
