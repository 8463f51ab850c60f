"""``POST /det/api/v1/experiments`` and the experiment list in process on a real master
(SQLite): a context sent as Determined's clients send it (files, base64, in JSON) is checked
as every upload is, so a hostile one is refused whole and creates nothing; a config that only
checks is answered as Determined answers it; the list's filters and refusals.

The real ``det`` and SDK drive the same routes in ``tests/integration/test_det_experiments.py``."""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
import pytest

from assay.master import Master
from assay.rest import determined as det
from tests.unit.api.test_determined_api import bearer, call, master, refusal, signed_in

__all__ = ["master"]

CONFIG = (
    "name: unit\nentrypoint: python3 train.py\n"
    "searcher: {name: single, metric: loss, max_length: {batches: 3}}\n"
)


def _file(path: str, data: bytes = b"print('hi')\n", kind: int = 48) -> dict[str, Any]:
    content = base64.b64encode(data).decode()
    return {"path": path, "type": kind, "content": content, "mtime": "0", "mode": 420,
            "uid": 0, "gid": 0}  # fmt: skip


def _create(master: Master, token: str, **body: Any) -> httpx.Response:
    sent = {"config": CONFIG, "modelDefinition": [_file("train.py")], "activate": False, **body}
    return call(
        master, "POST", "/det/api/v1/experiments", content=json.dumps(sent), **bearer(token)
    )


def _count(master: Master, token: str) -> int:
    listed = call(master, "GET", "/det/api/v1/experiments", **bearer(token))
    return int(listed.json()["pagination"]["total"])


@pytest.mark.parametrize(
    ("files", "says"),
    [
        ([_file("../escape.py"), _file("train.py")], ".."),
        ([_file("/etc/cron.d/x"), _file("train.py")], "absolute"),
        ([_file("link", kind=50), _file("train.py")], "type 50 is neither a file"),
        ([{**_file("train.py"), "content": "not base64!"}], "content is not base64"),
        ([_file("notes.txt")], "train.py"),
    ],
)
def test_a_hostile_or_broken_context_is_refused_whole_and_creates_nothing(
    master: Master, files: list[dict[str, Any]], says: str
) -> None:
    token = signed_in(master)
    before = _count(master, token)
    said = refusal(_create(master, token, modelDefinition=files), 400)
    assert says in said and "\n" not in said
    assert _count(master, token) == before


def test_a_context_past_the_size_limit_is_refused_as_too_large(master: Master) -> None:
    token = signed_in(master)
    big = [_file(f"f{i}.bin", b"\0" * (24 * 2**20)) for i in range(4)]
    said = refusal(_create(master, token, modelDefinition=[*big, _file("train.py")]), 413)
    assert "95" in said and ".detignore" in said


def test_validate_only_checks_and_answers_an_empty_experiment_creating_nothing(
    master: Master,
) -> None:
    token = signed_in(master)
    before = _count(master, token)
    checked = _create(master, token, validateOnly=True)
    assert checked.status_code == 200, checked.text
    exp = det.CreateExperimentResponse.model_validate(checked.json()).experiment
    assert (exp.id, exp.name, exp.searcher_type) == (0, "unit", "single")
    bad = _create(master, token, validateOnly=True, config=CONFIG.replace("single", "nope"))
    assert "searcher" in refusal(bad, 400)
    assert _count(master, token) == before


def test_what_assay_has_no_place_for_is_refused_naming_what_to_do(master: Master) -> None:
    token = signed_in(master)
    assert "assay experiment fork 3" in refusal(_create(master, token, parentId=3), 400)
    assert "project 7 not found" in refusal(_create(master, token, projectId=7), 404)
    assert "templates" in refusal(_create(master, token, template="t"), 400)
    created = _create(master, token)
    assert created.status_code == 200, created.text
    exp_id = created.json()["experiment"]["id"]
    patch = {"id": exp_id, "notes": "# about it"}
    said = refusal(
        call(
            master,
            "PATCH",
            f"/det/api/v1/experiments/{exp_id}",
            content=json.dumps(patch),
            **bearer(token),
        ),
        400,
    )
    assert "notes" in said and "description" in said
    order = call(
        master, "GET", "/det/api/v1/experiments?sortBy=SORT_BY_CHECKPOINT_SIZE", **bearer(token)
    )
    assert "SORT_BY_CHECKPOINT_SIZE" in refusal(order, 400)


def test_the_list_filters_pages_and_counts_from_the_end(master: Master) -> None:
    token = signed_in(master)
    for name in ("alpha", "beta", "gamma"):
        assert _create(master, token, config=CONFIG.replace("unit", name)).status_code == 200

    def names(query: str) -> tuple[list[str], dict[str, int]]:
        answer = call(master, "GET", f"/det/api/v1/experiments?{query}", **bearer(token))
        assert answer.status_code == 200, answer.text
        body = det.GetExperimentsResponse.model_validate(answer.json())
        return [e.name for e in body.experiments], body.pagination.model_dump()

    shown, page = names("name=a&orderBy=ORDER_BY_DESC&limit=2")
    assert shown == ["gamma", "beta"] and page["total"] == 3 and page["endIndex"] == 2
    shown, page = names("name=a&offset=-1")
    assert shown == ["gamma"] and page["startIndex"] == 2
    assert names("states=STATE_PAUSED&users=admin&name=beta")[0] == ["beta"]
    assert names("states=STATE_COMPLETED&name=beta")[0] == []
    assert names("archived=true")[0] == []
