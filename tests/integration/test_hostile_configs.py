"""Hostile and absurd experiment configs, sent to a real master as an attacker or a careless
script would: each is answered 400 with the field or the line that is wrong, quickly, nothing is
created, and the master stays as it was. The ``assay`` command refuses the same files in one line.
"""

from __future__ import annotations

import io
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from assay.errors import InvalidConfig
from tests.integration.cluster import Cluster, serve

BASE = "entrypoint: python3 train.py\nsearcher: {name: single, metric: loss, max_length: 1}\n"

MASTER_CONFIG = """
limits:
  max_grid_points: 1000
resource_pools:
  - pool_name: default
  - pool_name: capped
    max_slots: 4
  - pool_name: scaled
    provider:
      type: command
      launch_command: "true"
      terminate_command: "true"
      max_instances: 2
      slots_per_instance: 4
"""

# The 757-byte "billion laughs" of the report: 9**9 strings once expanded.
BOMB = "data:\n" + "".join(
    f"  {level}: &{level} [{', '.join([f'*{prev}'] * 9 if prev.strip() else ['lol'] * 9)}]\n"
    for prev, level in zip(" abcdefgh", "abcdefghi", strict=True)
)


@pytest.fixture(scope="module")
def cluster(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Cluster]:
    """One master for the whole module (no agent: nothing here may ever run)."""
    root = tmp_path_factory.mktemp("hostile")
    (root / "master.yaml").write_text(MASTER_CONFIG)
    c = Cluster(root / "home", master_config=root / "master.yaml")
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


def post(cluster: Cluster, config: bytes) -> httpx.Response:
    return httpx.post(
        f"{cluster.url}/api/v1/experiments",
        files={
            "config": (None, config),
            "context": ("context.tar.gz", context(), "application/gzip"),
        },
        headers=cluster.auth_headers(),
        timeout=30,
    )


def experiments(cluster: Cluster) -> int:
    return cluster.client.list_experiments(archived=True).pagination.total


def refused(cluster: Cluster, config: bytes) -> dict[str, Any]:
    """The error answering ``config``, which must be a 400 that created nothing."""
    before = experiments(cluster)
    answer = post(cluster, config)
    assert answer.status_code == 400, answer.text[:500]
    assert experiments(cluster) == before
    error: dict[str, Any] = answer.json()["error"]
    return error


def said(error: dict[str, Any]) -> str:
    return "\n".join(
        [error["message"], *(f"{d['path']}: {d['message']}" for d in error["details"])]
    )


HOSTILE: dict[str, tuple[str, str]] = {
    # name: (text after BASE, what the answer must say)
    "deep nesting": ("data: " + "[" * 2000 + "]" * 2000, "nested deeper than 64 levels"),
    "anchor in itself": ("data: &a {x: [*a]}", "the anchor &a is used inside itself"),
    "alias chain": (
        "data:\n" + "".join(f"  x{i}: &x{i} [{f'*x{i - 1}' if i else 1}]\n" for i in range(80)),
        "nested deeper than 64 levels",
    ),
    "5000-digit integer": ("data: {n: " + "9" * 5000 + "}", "integers must fit in 64 bits"),
    "bad tag": ("data: {t: !!timestamp nope}", "cannot read this !!timestamp value"),
    "control byte": ("name: caf\x80\n", "character U+0080 is not allowed"),
    "grid of 10^12": (
        "searcher: {name: grid, metric: loss, max_length: 1}\nhyperparameters: {"
        + ", ".join(f"h{i}: {{type: double, minval: 0, maxval: 1, count: 1000}}" for i in range(4))
        + "}",
        "hyperparameters: the grid has 1,000,000,000,000 points, over the limit of 1,000 (this "
        "master's limit; its limits.max_grid_points setting raises it)",
    ),
    "NaN bound": (
        "hyperparameters: {lr: {type: double, minval: .nan, maxval: 1}}",
        "hyperparameters.lr.minval: must be a finite number, got NaN",
    ),
    "infinite log bound": (
        "hyperparameters: {lr: {type: log, minval: -.inf, maxval: 1}}",
        "hyperparameters.lr.minval: must be a finite number",
    ),
    "log power overflow": (
        "hyperparameters: {lr: {type: log, minval: 1, maxval: 999}}",
        "hyperparameters.lr.maxval: base ** maxval (10.0 ** 999) is beyond the range of a float",
    ),
    "NaN constant": ("hyperparameters: {x: .nan}", "hyperparameters.x: must be a finite number"),
    "huge name": ("name: " + "n" * 600_000, "name: must have at most 256 characters, got 600,000"),
    "many labels": (
        "labels: [" + ", ".join(["l"] * 500) + "]",
        "labels: must have at most 100 items",
    ),
    "long hyperparameter name": (
        "hyperparameters: {" + "h" * 1000 + ": 1}",
        "names may have at most 256",
    ),
    "max_trials 10^9": (
        "searcher: {name: random, metric: loss, max_trials: 1000000000}",
        "searcher.max_trials: must be <= 1,000,000, got 1000000000",
    ),
    "64-bit overflow": (
        "max_restarts: 99999999999999999999",
        "max_restarts: must be <= 2,147,483,647",
    ),
    "seed overflow": (
        "reproducibility: {experiment_seed: 9999999999}",
        "reproducibility.experiment_seed: must be <= 2,147,483,647",
    ),
    "length overflow": (
        "min_validation_period: {batches: 9999999999}",
        "min_validation_period.batches: must be <= 2,147,483,647",
    ),
    "slots 10^12": (
        "resources: {slots_per_trial: 1000000000000}",
        "resources.slots_per_trial: must be <= 65,536",
    ),
    "slots over a pool's max_slots": (
        "resources: {slots_per_trial: 5, resource_pool: capped}",
        "resources.slots_per_trial: asks for 5 slots a trial, but resource pool 'capped' has at "
        "most 4 (its max_slots)",
    ),
    "slots over a provider's capacity": (
        "resources: {slots_per_trial: 9, resource_pool: scaled}",
        "resource pool 'scaled' grows to at most 8 slots (2 instances of 4 slots",
    ),
    "no concurrency limit on many trials": (
        "searcher: {name: random, metric: loss, max_trials: 100000, max_concurrent_trials: 0}",
        "searcher.max_concurrent_trials: 0 (no limit) would let all 100,000 trials start at once",
    ),
    "lone surrogate": ('description: "\\udc80"', "description: must be valid Unicode text"),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_config_is_refused_with_400_naming_what_is_wrong(
    cluster: Cluster, name: str
) -> None:
    text, expected = HOSTILE[name]
    config = (
        BASE + text
        if not text.startswith("searcher")
        else BASE.split("searcher", maxsplit=1)[0] + text
    )
    error = refused(cluster, config.encode("utf-8", "surrogatepass"))
    assert error["type"] == "InvalidConfig"
    assert expected in said(error), said(error)
    assert len(said(error)) < 2000  # the answer names the problem; it does not echo the input


def test_yaml_alias_bomb_is_refused_within_a_second_with_master_memory_flat(
    cluster: Cluster,
) -> None:
    assert cluster.master is not None
    assert len(BOMB.encode()) < 800

    def rss_kib() -> int:
        status = Path(f"/proc/{cluster.master.pid}/status").read_text()  # type: ignore[union-attr]
        return int(
            next(line for line in status.splitlines() if line.startswith("VmRSS")).split()[1]
        )

    before = rss_kib()
    started = time.monotonic()
    error = refused(cluster, (BASE + BOMB).encode())
    elapsed = time.monotonic() - started
    assert "with its aliases expanded, this holds more than 100,000 values" in error["message"]
    assert elapsed < 1.0
    assert rss_kib() - before < 50 * 1024
    assert cluster.client.info()  # and it still answers


def test_a_config_over_its_limit_is_refused_with_413_before_it_is_parsed(cluster: Cluster) -> None:
    before = experiments(cluster)
    answer = post(cluster, (BASE + "description: " + "d" * (9 * 2**20)).encode())
    assert answer.status_code == 413, answer.text[:500]
    assert (
        "the config field of POST /api/v1/experiments is over its limit of 8 MiB"
        in (answer.json()["error"]["message"])
    )
    assert experiments(cluster) == before


def test_the_client_sees_an_invalid_config_error_naming_the_field(cluster: Cluster) -> None:
    with pytest.raises(InvalidConfig) as info:
        cluster.client.create_experiment(BASE + "resources: {max_slots: 99999999999}", context())
    assert [str(d) for d in info.value.details] == [
        "resources.max_slots: must be <= 2,147,483,647, got 99999999999"
    ]


def test_cli_refuses_hostile_files_in_one_line_and_debug_shows_the_traceback(
    cluster: Cluster, tmp_path: Path
) -> None:
    files = {
        "latin1.yaml": (BASE + "name: caf\xe9\n").encode("latin-1"),
        "bomb.yaml": (BASE + BOMB).encode(),
        "grid.yaml": HOSTILE["grid of 10^12"][0].join(["entrypoint: x\n", "\n"]).encode(),
    }
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    before = experiments(cluster)
    latin = cluster.cli("experiment", "create", str(tmp_path / "latin1.yaml"), str(tmp_path))
    assert latin.returncode == 1
    offset = len(BASE) + len("name: caf")
    where = f"byte 0xe9 at offset {offset} (line 3, column 10) is not UTF-8"
    assert latin.stderr.strip().splitlines() == [
        f"error: {tmp_path / 'latin1.yaml'} is not UTF-8 text: {where}; save the file as UTF-8",
    ]
    for name, says in [
        ("bomb.yaml", "with its aliases expanded, this holds more than 100,000 values"),
        ("grid.yaml", "the grid has 1,000,000,000,000 points, over the limit of 100,000"),
    ]:
        done = cluster.cli("preview-search", str(tmp_path / name))
        assert done.returncode == 1 and says in done.stderr
        assert "Traceback" not in done.stderr
    debug = cluster.cli("--debug", "preview-search", str(tmp_path / "bomb.yaml"))
    assert debug.returncode == 1 and "Traceback" in debug.stderr and "InvalidConfig" in debug.stderr
    assert experiments(cluster) == before


def test_an_openpai_job_posted_as_an_experiment_is_refused_in_one_line(cluster: Cluster) -> None:
    job = b"protocolVersion: 2\nname: hello\ntype: job\ntaskRoles: {worker: {commands: [x]}}\n"
    error = refused(cluster, job)
    assert error["message"] == (
        "this config is an OpenPAI job, not an experiment config: "
        "submit it with `assay job submit <file>`"
    )
    assert error["details"] == []
