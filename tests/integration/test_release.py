"""The release artifacts as a user gets them: an sdist and a wheel built from it carry the web UI
and the commit, the same commit gives the same bytes, and the wheel installed into a fresh
virtual environment, away from the source tree and without Node.js, runs a cluster that serves
the UI and its API docs and takes an experiment to the end."""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import httpx
import pytest

from tests.e2e.conftest import need
from tests.integration.cluster import free_port

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
UI_INDEX = ROOT / "src" / "assay" / "webui" / "dist" / "index.html"


def head_commit() -> str:
    """The checkout's commit, from git itself (what a release must say it was built from)."""
    done = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def _build(out: Path) -> tuple[Path, Path]:
    """`make dist`'s build (an sdist, then a wheel from it), without build isolation: the suite's
    environment has hatchling already, and downloading it again proves nothing more."""
    done = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    (sdist,) = out.glob("*.tar.gz")
    (wheel,) = out.glob("*.whl")
    return sdist, wheel


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    need(None if UI_INDEX.is_file() else "the web UI is not built (make webui)")
    if not (ROOT / ".git").exists():
        pytest.skip("a release is built from a git checkout")
    return _build(tmp_path_factory.mktemp("dist"))


def test_the_sdist_and_the_wheel_carry_the_ui_and_the_commit(
    artifacts: tuple[Path, Path],
) -> None:
    sdist, wheel = artifacts
    with zipfile.ZipFile(wheel) as whl:
        names = set(whl.namelist())
        assert "assay/webui/dist/index.html" in names
        assert any(n.startswith("assay/webui/dist/assets/") for n in names)
        assert whl.read("assay/BUILD_COMMIT").decode().strip() == head_commit()
        # Nothing of the source tree beyond the package: no tests, no web sources.
        assert {n.split("/")[0] for n in names} <= {
            "assay",
            f"{wheel.name.split('-py3')[0]}.dist-info",
        }
    with tarfile.open(sdist) as tar:
        inside = {name.split("/", 1)[-1] for name in tar.getnames()}
    assert {"src/assay/webui/dist/index.html", "src/assay/BUILD_COMMIT", "hatch_build.py"} <= inside
    assert not any("node_modules" in name or name.startswith(".venv") for name in inside)


def test_the_same_commit_builds_the_same_bytes(
    artifacts: tuple[Path, Path], tmp_path: Path
) -> None:
    again = _build(tmp_path)
    digest = [hashlib.sha256(path.read_bytes()).hexdigest() for path in (*artifacts, *again)]
    assert digest[:2] == digest[2:]


def test_a_release_is_not_built_without_its_ui(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(
        ROOT, tree,
        ignore=shutil.ignore_patterns(".venv*", "node_modules", "webui", ".git", "tests", "web"),
    )  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--wheel", "--outdir",
         str(tmp_path / "out"), str(tree)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode != 0
    assert (
        "the web UI is not built" in done.stdout + done.stderr
        and "make dist" in done.stdout + done.stderr
    )


def _tools_without_node(into: Path) -> str:
    """A PATH with the fresh environment first and the system's tools, but no Node.js."""
    into.mkdir()
    for tool in ("sh", "bash", "env", "git", "uname", "cat", "ls", "id"):
        found = shutil.which(tool)
        if found:
            (into / tool).symlink_to(found)
    return str(into)


def test_the_wheel_in_a_fresh_environment_serves_the_ui_and_runs_an_experiment(
    artifacts: tuple[Path, Path], tmp_path: Path
) -> None:
    _, wheel = artifacts
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    install = subprocess.run(
        [str(venv / "bin" / "pip"), "install", "-q", "--no-compile", f"{wheel}[examples]"],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert install.returncode == 0, install.stderr[-3000:]
    work = tmp_path / "work"
    shutil.copytree(ROOT / "examples" / "digits", work / "digits")
    env = {
        "PATH": f"{venv / 'bin'}:{_tools_without_node(tmp_path / 'tools')}",
        "HOME": str(tmp_path / "user"),
        "ASSAY_HOME": str(tmp_path / "assay-home"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "LANG": "C.UTF-8",
        "COLUMNS": "160",
    }
    assert shutil.which("node", path=env["PATH"]) is None

    def assay(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["assay", *args], cwd=work, env=env, capture_output=True, text=True,
            timeout=timeout, check=False,
        )  # fmt: skip

    where = subprocess.run(
        ["python", "-c", "import assay; print(assay.__file__)"],
        cwd=work, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert where.stdout.startswith(str(venv)), "the test must run the installed wheel"
    version = assay("--version")
    assert version.returncode == 0
    assert version.stdout.strip().endswith(f"(commit {head_commit()[:12]})")
    port = free_port()
    up = assay("up", "--port", str(port), "--slots", "1")
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        base = f"http://127.0.0.1:{port}"
        page = httpx.get(f"{base}/", timeout=30)
        assert page.status_code == 200 and "The web UI is not built" not in page.text
        script = re.search(r'src="(/assets/[^"]+\.js)"', page.text)
        assert script is not None, page.text
        assert httpx.get(base + script[1], timeout=30).status_code == 200
        docs = httpx.get(f"{base}/docs", timeout=30)
        assert docs.status_code == 200
        offline = re.findall(r'(?:src|href)="(/[^"]+\.(?:js|css))"', docs.text)
        assert offline, "the API docs' assets come from the master itself"
        assert "cdn" not in docs.text.lower()
        for asset in offline:
            assert httpx.get(base + asset, timeout=30).status_code == 200, asset
        info = httpx.get(f"{base}/api/v1/master", timeout=30).json()
        assert info["commit"] == head_commit()
        run = assay("experiment", "create", "digits/const.yaml", "digits", "--follow", timeout=600)
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
        listed = assay("experiment", "list", "--json")
        assert '"COMPLETED"' in listed.stdout, listed.stdout
    finally:
        down = assay("down")
        assert down.returncode == 0, down.stderr
