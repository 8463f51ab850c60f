"""An experiment whose entrypoint imports a training framework that no connected agent of its
pool can import is refused when it is submitted (and when it is checked), in one line naming
the module, the pool and the install command; one the agents have is accepted. The agents say
what they have in their hello, from the Python that runs their trials."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import httpx
import pytest

from assay.context import pack_context
from tests.integration.cluster import Cluster

pytestmark = pytest.mark.integration

CONFIG = """\
name: needs-a-framework
entrypoint: python3 train.py
searcher: {name: single, metric: loss, max_length: {batches: 1}}
"""


def context(tmp_path: Path, module: str) -> Path:
    root = tmp_path / module
    root.mkdir()
    (root / "train.py").write_text(f"import os\nimport {module}\n\nprint({module})\n")
    (root / "config.yaml").write_text(CONFIG)
    return root


@pytest.mark.skipif(
    importlib.util.find_spec("horovod") is not None, reason="horovod is installed here"
)
def test_an_entrypoint_importing_a_framework_no_agent_has_is_refused_at_submission(
    cluster: Cluster, tmp_path: Path
) -> None:
    root = context(tmp_path, "horovod")
    result = cluster.cli("e", "create", str(root / "config.yaml"), str(root))
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stderr.count("\n") == 1, result.stderr  # one line
    assert result.stderr == (
        "error: invalid experiment config: entrypoint: train.py imports horovod, which none "
        "of the 1 connected agent of resource pool 'default' can import; install it where the "
        "agents run (`pip install horovod`) and restart them (a cluster of `assay up`: "
        "`assay down`, then `assay up`), or submit to a pool that has it\n"
    )
    assert cluster.client.list_experiments().experiments == []

    answer = httpx.post(
        f"{cluster.url}/api/v1/experiments/validate",
        headers=cluster.auth_headers(),
        data={"config": CONFIG},
        files={"context": ("context.tar.gz", pack_context(root).data, "application/gzip")},
    )
    assert answer.status_code == 400, answer.text
    (detail,) = answer.json()["error"]["details"]
    assert detail["path"] == "entrypoint" and "imports horovod" in detail["message"]


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
def test_an_entrypoint_importing_a_framework_the_agent_has_is_accepted(
    cluster: Cluster, tmp_path: Path
) -> None:
    root = context(tmp_path, "torch")
    result = cluster.cli("e", "create", "--paused", str(root / "config.yaml"), str(root))
    assert result.returncode == 0, result.stdout + result.stderr
    assert len(cluster.client.list_experiments().experiments) == 1
