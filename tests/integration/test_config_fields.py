"""A config as a careless or hostile client sends it to a real master: text that is not UTF-8 is
refused with 400 naming the field and the offset of its first bad byte, as the CLI refuses the
file (it was read as Latin-1); a config past its limit with 413 naming the field, the limit and
what to do, which the CLI shows in one line (it was the parser's raw 400). An NNI config whose
search space inline makes it larger than a mebibyte, which the CLI sends, is taken."""

from __future__ import annotations

import io
import json
import tarfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from tests.integration.cluster import Cluster, serve

pytestmark = pytest.mark.integration

CONFIG = "entrypoint: python3 train.py\nsearcher: {name: single, metric: loss, max_length: 1}\n"
LATIN1 = (CONFIG + "description: caf\xe9\n").encode("latin-1")
BAD_BYTE_AT = LATIN1.index(b"\xe9")
JOB = "protocolVersion: 2\nname: caf\xe9\ntype: job\n".encode("latin-1")
MiB = 2**20


@pytest.fixture(scope="module")
def cluster(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Cluster]:
    """One master for the module, without agents: what is created here never runs."""
    c = Cluster(tmp_path_factory.mktemp("fields") / "home")
    c.start_master()
    yield from serve(c, request)


def context() -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        data = b"print('never runs')\n"
        info = tarfile.TarInfo("train.py")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def upload(cluster: Cluster, path: str, **fields: bytes) -> httpx.Response:
    parts = {name: (None, value) for name, value in fields.items()}
    return httpx.post(
        f"{cluster.url}{path}",
        files={**parts, "context": ("context.tar.gz", context(), "application/gzip")},
        headers=cluster.auth_headers(),
        timeout=60,
    )


def created(cluster: Cluster) -> tuple[int, int]:
    """Experiments and jobs there are: a refusal creates neither."""
    return (
        cluster.client.list_experiments(archived=True).pagination.total,
        len(cluster.client.tasks()),
    )


@pytest.mark.parametrize(
    "path", ["/api/v1/experiments", "/api/v1/experiments/validate", "/api/v1/jobs"]
)
def test_a_config_field_that_is_not_utf8_is_refused_naming_the_byte_as_the_cli_does(
    cluster: Cluster, path: str, tmp_path: Path
) -> None:
    before = created(cluster)
    answer = upload(cluster, path, config=LATIN1)
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    problem = f"byte 0xe9 at offset {BAD_BYTE_AT} (line 3, column 17) is not UTF-8"
    assert error["message"] == f"config is not UTF-8 text: {problem}; save the file as UTF-8"
    assert error["details"] == [{"path": "config:3:17", "message": problem}]
    assert created(cluster) == before
    # The CLI refuses the same bytes as a file, with the same words.
    (tmp_path / "latin1.yaml").write_bytes(LATIN1)
    cli = cluster.cli("experiment", "create", str(tmp_path / "latin1.yaml"), str(tmp_path))
    assert cli.returncode == 1 and problem in cli.stderr


def test_other_text_fields_must_be_utf8_too(cluster: Cluster) -> None:
    answer = upload(cluster, "/api/v1/experiments", config=CONFIG.encode(), notes=b"na\xefve")
    assert answer.status_code == 400, answer.text
    message = answer.json()["error"]["message"]
    assert message.startswith("notes is not UTF-8 text: byte 0xef at offset 2 (line 1, column 3)")


def test_an_openpai_job_body_that_is_not_utf8_is_refused_naming_the_byte(cluster: Cluster) -> None:
    before = created(cluster)
    answer = httpx.post(
        f"{cluster.url}/api/v2/jobs", content=JOB, headers=cluster.auth_headers(), timeout=30
    )
    assert answer.status_code == 400, answer.text
    at = JOB.index(b"\xe9")
    problem = f"byte 0xe9 at offset {at} (line 2, column 10) is not UTF-8"
    assert answer.json()["code"] == "BadConfigurationError"
    assert answer.json()["message"].startswith(f"<job file> is not UTF-8 text: {problem}")
    assert created(cluster) == before


def test_a_config_field_over_its_limit_is_413_naming_the_field_and_the_limit(
    cluster: Cluster,
) -> None:
    before = created(cluster)
    huge = (CONFIG + "description: " + "d" * (9 * MiB)).encode()
    for path in ("/api/v1/experiments", "/api/v1/jobs"):
        answer = upload(cluster, path, config=huge)
        assert answer.status_code == 413, answer.text
        message = answer.json()["error"]["message"]
        assert message.startswith(f"the config field of POST {path} is over its limit of 8 MiB; ")
        assert "search space" in message
    answer = upload(
        cluster, "/api/v1/experiments", config=CONFIG.encode(), overrides=b"x" * 2 * MiB
    )
    assert answer.status_code == 413, answer.text
    assert answer.json()["error"]["message"] == (
        "the overrides field of POST /api/v1/experiments is over its limit of 1 MiB; each field "
        "but config and original_config may have at most 1 MiB"
    )
    assert created(cluster) == before


def nni_project(tmp_path: Path, values: list[str]) -> Path:
    """An NNI config beside a search space file of one choice among ``values``."""
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "trial.py").write_text("print('never runs')\n")
    space = {"pick": {"_type": "choice", "_value": values}}
    (tmp_path / "search_space.json").write_text(json.dumps(space))
    config = {
        "searchSpaceFile": "search_space.json",
        "trialCommand": "python3 trial.py",
        "trialCodeDirectory": "code",
        "trialConcurrency": 1,
        "maxTrialNumber": 2,
        "tuner": {"name": "Random"},
        "trainingService": {"platform": "local"},
    }
    path = tmp_path / "config.yml"
    path.write_text(yaml.safe_dump(config))
    return path


def test_an_nni_config_with_a_search_space_past_a_mebibyte_is_created(
    cluster: Cluster, tmp_path: Path
) -> None:
    # 20,000 values: well within a config's 100,000, and 2 MiB once inline as the CLI sends it.
    path = nni_project(tmp_path, [f"value-{i:06d}-" + "v" * 60 for i in range(20_000)])
    out = cluster.cli("experiment", "create", str(path), "--paused", "--json", check=True)
    exp = cluster.client.experiment(int(json.loads(out.stdout)["id"]))
    assert exp.state == "PAUSED"
    assert len(exp.config["hyperparameters"]["pick"]["options"]) == 20_000


def test_the_cli_shows_a_config_past_its_limit_in_one_line(
    cluster: Cluster, tmp_path: Path
) -> None:
    before = created(cluster)
    path = nni_project(tmp_path, [f"{i}-" + "v" * 4000 for i in range(2_500)])
    cli = cluster.cli("experiment", "create", str(path), "--paused")
    assert cli.returncode == 1, cli.stdout
    lines = [line for line in cli.stderr.splitlines() if not line.startswith("note: ")]
    assert len(lines) == 1, cli.stderr
    assert lines[0].startswith(
        "error: the config field of POST /api/v1/experiments is over its limit of 8 MiB; "
    )
    assert created(cluster) == before
