"""The streamed experiment upload and the request body limits, against a real master process.

Memory is measured on the master itself: its peak resident set (``VmHWM``) is reset before a
request (``/proc/PID/clear_refs``) and read after, so a body held in memory even for a moment
would show, however fast it was let go again.
"""

from __future__ import annotations

import http.client
import json
import secrets
import sqlite3
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from assay.context import pack_context
from assay.errors import InvalidContext, TooLarge
from tests.integration.cluster import CONTEXTS, Cluster

pytestmark = pytest.mark.integration

MIB = 2**20
# Far below the 100 MiB a context may have: a refused body that was held in memory, even
# once, would pass it.
RSS_BOUND = 32 * MIB

CONFIG = textwrap.dedent(
    """
    entrypoint: python3 train.py
    searcher: {name: single, metric: loss, max_length: {batches: 5}}
    """
)


def _status(pid: int) -> dict[str, int]:
    values = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            values[key] = int(value.split()[0]) * 1024
    return values


class PeakRss:
    """How far the master's resident set rose above where it stood at the start, at its peak."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        Path(f"/proc/{pid}/clear_refs").write_text("5")  # peak := current
        self.start = _status(pid)["VmRSS"]

    def growth(self) -> int:
        return _status(self.pid)["VmHWM"] - self.start


class Multipart:
    """A hand-made multipart body with a context part of ``size`` bytes, streamed in 1 MiB
    chunks so the test process never holds it either."""

    def __init__(self, size: int, config: str = CONFIG) -> None:
        self.boundary = f"test-{secrets.token_hex(8)}"
        self.head = (
            f"--{self.boundary}\r\n"
            'Content-Disposition: form-data; name="config"\r\n\r\n'
            f"{config}\r\n"
            f"--{self.boundary}\r\n"
            'Content-Disposition: form-data; name="context"; filename="context.tar.gz"\r\n'
            "Content-Type: application/gzip\r\n\r\n"
        ).encode()
        self.tail = f"\r\n--{self.boundary}--\r\n".encode()
        self.size = size

    @property
    def length(self) -> int:
        return len(self.head) + self.size + len(self.tail)

    def chunks(self) -> Iterator[bytes]:
        yield self.head
        block = b"\x1f\x8b" + bytes(MIB - 2)
        left = self.size
        while left > 0:
            yield block[: min(left, MIB)]
            left -= MIB
        yield self.tail


def post(
    cluster: Cluster,
    path: str,
    chunks: Iterator[bytes],
    content_type: str,
    length: int | None = None,
) -> tuple[int, Any]:
    """POST a streamed body: chunked, or with ``length`` as its declared Content-Length."""
    conn = http.client.HTTPConnection("127.0.0.1", cluster.port, timeout=120)
    headers = {"Content-Type": content_type, **cluster.auth_headers()}
    if length is not None:
        headers["Content-Length"] = str(length)
    try:
        conn.request("POST", path, body=chunks, headers=headers, encode_chunked=length is None)
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


def upload(cluster: Cluster, body: Multipart, *, declared: bool) -> tuple[int, Any, int]:
    """POST ``body`` to the create route (its length declared up front, or chunked): the status,
    the answer, and how far the master's peak RSS rose meanwhile."""
    assert cluster.master is not None
    peak = PeakRss(cluster.master.pid)
    status, answer = post(
        cluster,
        "/api/v1/experiments",
        body.chunks(),
        f"multipart/form-data; boundary={body.boundary}",
        length=body.length if declared else None,
    )
    return status, answer, peak.growth()


def stored_rows(cluster: Cluster) -> dict[str, int]:
    with sqlite3.connect(cluster.home / "assay.db") as db:
        return {
            table: db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            for table in ("experiments", "contexts", "jobs", "trials")
        }


NOTHING = {"experiments": 0, "contexts": 0, "jobs": 0, "trials": 0}


def test_streamed_upload_far_over_the_limit_is_cut_off_without_growing_the_master(
    cluster: Cluster,
) -> None:
    status, answer, growth = upload(cluster, Multipart(320 * MIB), declared=False)
    assert status == 413, answer
    error = answer["error"]
    assert error["type"] == "TooLarge"
    assert error["message"].startswith(
        "request body too large: POST /api/v1/experiments accepts at most 118 MiB and 118."
    ), error["message"]
    assert "had arrived when it was cut off" in error["message"]
    assert "a packed context may be at most 100 MiB (95 MiB of files)" in error["message"]
    assert growth < RSS_BOUND, f"the master's peak RSS rose by {growth / MIB:.1f} MiB"
    assert stored_rows(cluster) == NOTHING


def test_declared_oversized_upload_is_refused_before_any_of_it_is_read(cluster: Cluster) -> None:
    status, answer, growth = upload(cluster, Multipart(320 * MIB), declared=True)
    assert status == 413
    assert answer["error"]["message"].startswith(
        "request body too large: POST /api/v1/experiments accepts at most 118 MiB and this one "
        "declares 320.0 MiB"
    )
    assert growth < RSS_BOUND, f"the master's peak RSS rose by {growth / MIB:.1f} MiB"
    assert stored_rows(cluster) == NOTHING


def test_context_part_over_the_archive_limit_is_refused_naming_limit_and_size(
    cluster: Cluster,
) -> None:
    # The body fits its 118 MiB; the context part does not fit its 100.
    status, answer, growth = upload(cluster, Multipart(101 * MIB), declared=True)
    assert status == 413
    assert answer["error"]["message"].startswith(
        "the context archive is 101.0 MiB, over the 100 MiB limit on a packed context "
        "(95 MiB of files plus 5 MiB for the archive's headers)"
    )
    assert growth < RSS_BOUND, f"the master's peak RSS rose by {growth / MIB:.1f} MiB"
    assert stored_rows(cluster) == NOTHING


def test_json_route_refuses_a_streamed_body_over_the_default_limit(cluster: Cluster) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"updates": ['
        for _ in range(9 * 1024):
            yield b'{"job_id": "x", "priority": 1},' * 32
        yield b"]}"

    status, answer = post(cluster, "/api/v1/jobs/update-batch", chunks(), "application/json")
    assert status == 413
    assert answer["error"]["message"].startswith(
        "request body too large: POST /api/v1/jobs/update-batch accepts at most 8 MiB and 8."
    )


def test_action_with_an_oversized_declared_body_is_refused_and_not_done(cluster: Cluster) -> None:
    exp_id = cluster.submit(CONFIG, activate=False)

    def chunks() -> Iterator[bytes]:
        for _ in range(9):
            yield bytes(MIB)

    status, answer = post(
        cluster, f"/api/v1/experiments/{exp_id}/kill", chunks(), "application/json", 9 * MIB
    )
    assert status == 413
    assert "accepts at most 8 MiB and this one declares 9.0 MiB" in answer["error"]["message"]
    assert cluster.client.experiment(exp_id).state == "PAUSED", "the kill must not happen"


def test_upload_as_json_is_refused_saying_what_the_route_takes(cluster: Cluster) -> None:
    body = json.dumps({"config": CONFIG, "context": ""}).encode()
    status, answer = post(cluster, "/api/v1/experiments", iter([body]), "application/json")
    assert status == 400
    assert answer["error"]["message"] == (
        "POST /api/v1/experiments takes multipart/form-data (a `config` field, optional "
        "`overrides` and `activate` fields, and the context tar.gz as the `context` file), "
        "not application/json"
    )
    assert stored_rows(cluster) == NOTHING


def test_upload_missing_its_context_names_the_field(cluster: Cluster) -> None:
    boundary = "b0undary"
    body = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="config"\r\n\r\n{CONFIG}\r\n'
        f"--{boundary}--\r\n"
    ).encode()
    status, answer = post(
        cluster, "/api/v1/experiments", iter([body]), f"multipart/form-data; boundary={boundary}"
    )
    assert status == 400
    assert [d["path"] for d in answer["error"]["details"]] == ["context"]


def test_openapi_documents_the_multipart_upload(cluster: Cluster) -> None:
    spec = cluster.client.http.get("/openapi.json")
    operation = spec["paths"]["/api/v1/experiments"]["post"]
    content = operation["requestBody"]["content"]
    assert list(content) == ["multipart/form-data"]
    assert (
        content["multipart/form-data"]["encoding"]["context"]["contentType"] == "application/gzip"
    )
    ref = content["multipart/form-data"]["schema"]["$ref"].rsplit("/", 1)[1]
    schema = spec["components"]["schemas"][ref]
    assert set(schema["properties"]) == {
        "config",
        "context",
        "overrides",
        "activate",
        "notes",
        "original_config",
    }
    assert set(schema["required"]) == {"config", "context"}
    assert schema["properties"]["overrides"]["type"] == "array"
    assert "413" in operation["responses"]
    assert "95 MiB of files" in operation["description"]


def test_client_streams_a_context_file_and_reports_progress(
    cluster: Cluster, tmp_path: Path
) -> None:
    archive = tmp_path / "context.tar.gz"
    archive.write_bytes(pack_context(CONTEXTS / "counter").data)
    seen: list[tuple[int, int]] = []
    exp = cluster.client.create_experiment(
        CONFIG,
        archive,
        overrides=["searcher.max_length.batches=3", "name=streamed"],
        activate=False,
        progress=lambda sent, total: seen.append((sent, total)),
    )
    assert exp.state == "PAUSED" and exp.name == "streamed"
    assert exp.config["searcher"]["max_length"] == {"batches": 3}
    total = seen[-1][1]
    assert seen[0] == (0, total) and seen[-1] == (total, total)
    assert total > archive.stat().st_size, "the body is the archive plus the fields"
    assert [sent for sent, _ in seen] == sorted(sent for sent, _ in seen)
    rows = stored_rows(cluster)
    assert rows["experiments"] == 1 and rows["contexts"] == 1


def test_client_raises_the_masters_early_refusal_of_an_oversized_context(
    cluster: Cluster,
) -> None:
    # The master answers 413 on the declared length and discards the rest as it arrives: the
    # client still gets to read the answer once it has sent everything.
    with pytest.raises(TooLarge, match=r"accepts at most 118 MiB and this one declares 130\.0 MiB"):
        cluster.client.create_experiment(CONFIG, bytes(130 * MIB))
    assert stored_rows(cluster) == NOTHING


def test_client_upload_of_something_not_gzip_gets_the_masters_message(cluster: Cluster) -> None:
    with pytest.raises(InvalidContext, match="not gzip data"):
        cluster.client.create_experiment(CONFIG, b"not a tarball")
    assert stored_rows(cluster) == NOTHING
