"""The shell examples of the README and docs/ that can run here, run as written.

A block whose fence has the line ``<!-- doc-test -->`` just above it (invisible on the page and
on the site) runs in bash, stopping at the first command that fails, from the repository's
root, with ``assay`` on the ``PATH`` and signed in to a fresh master and agent of its own on
loopback (so its first experiment is 1, as the docs' examples say), whose address stands in for
the docs' ``127.0.0.1:8080``. Every other shell example is still checked against the command
tree (``tests/unit/cli/test_docs_commands.py``).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.integration.cluster import ROOT, Cluster, serve

pytestmark = pytest.mark.integration

MARK = "<!-- doc-test -->"
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(?:bash|sh)\n(.*?)^```", re.DOTALL | re.MULTILINE)
DOCS_MASTER = "127.0.0.1:8080"
"""The address the docs' examples name: the local cluster `assay up` starts."""


@dataclass(frozen=True)
class Example:
    where: str
    script: str


def marked_examples() -> list[Example]:
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for block in FENCE.finditer(text):
            before = text[: block.start()].rstrip("\n").rsplit("\n", 1)[-1]
            if before.strip() == MARK:
                line = text.count("\n", 0, block.start()) + 1
                found.append(Example(f"{page.relative_to(ROOT)}:{line}", block[1]))
    return found


EXAMPLES = marked_examples()


def test_the_docs_mark_examples_to_run() -> None:
    # A mark misplaced (not right above a bash or sh fence) would silently run nothing. A mark
    # is a line of its own (the README names it in a sentence too).
    marks = sum(
        line.strip() == MARK
        for page in PAGES
        for line in page.read_text(encoding="utf-8").splitlines()
    )
    assert marks == len(EXAMPLES) >= 3, [e.where for e in EXAMPLES]


@pytest.fixture
def cluster(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Cluster]:
    c = Cluster(tmp_path / "home")
    c.start_master()
    c.start_agent("agent-1", slots=2)
    yield from serve(c, request)


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.where for e in EXAMPLES])
def test_a_marked_example_runs_as_written(cluster: Cluster, example: Example) -> None:
    script = example.script.replace(DOCS_MASTER, f"127.0.0.1:{cluster.port}")
    # `assay` is the one of the Python running the tests (the venv's).
    bin_dir = Path(sys.executable).parent
    env = {**cluster.env, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", script],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, (
        f"{example.where} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
