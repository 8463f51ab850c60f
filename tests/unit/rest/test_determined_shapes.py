"""Determined's shapes (``assay.rest.determined``): what its clients send reads into the
models, what the models write has every field its generated client requires, errors have its
master's shape, and lists are paged as its master pages them."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest
from pydantic import ValidationError

from assay.errors import InvalidRequest
from assay.rest import determined as det

DET_PYTHON = Path(__file__).resolve().parents[3] / ".venv-det" / "bin" / "python"


def test_the_client_hash_is_the_salted_sha512_determineds_clients_send() -> None:
    salted = hashlib.sha512(b"GubPEmmotfiK9TMD6Zdw" + b"s3cret").hexdigest()
    assert det.client_hash("s3cret") == salted
    assert det.client_hash("") == "", "an empty password is sent empty"


@pytest.mark.skipif(not DET_PYTHON.exists(), reason="no .venv-det: `make det-client`")
def test_the_client_hash_agrees_with_the_real_client() -> None:
    code = (
        "from determined.common.api.authentication import salt_and_hash; "
        "print(salt_and_hash('pässword 1'))"
    )
    real = subprocess.run([DET_PYTHON, "-c", code], capture_output=True, text=True, check=True)
    assert real.stdout.strip() == det.client_hash("pässword 1")


def test_the_login_the_cli_sends_reads_and_anything_else_is_refused() -> None:
    sent = {"username": "alice", "password": det.client_hash("x"), "isHashed": True}
    login = det.Login.model_validate(sent)
    assert login.is_hashed and login.username == "alice"
    assert not det.Login.model_validate({"username": "a", "password": "p"}).is_hashed
    for bad in (
        {"username": "a", "password": "p", "isHashed": "yes"},
        {"username": "a", "password": "p", "extra": 1},
        {"username": "", "password": "p"},
        {"username": "a"},
    ):
        with pytest.raises(ValidationError):
            det.Login.model_validate(bad)


def test_answers_carry_every_field_the_generated_client_requires() -> None:
    info = det.MasterInfo(version="0.38.1", master_id="m", cluster_id="c", cluster_name="n")
    written = info.model_dump(mode="json")
    # GET /info is snake_case, as Determined's master writes it.
    assert {"version", "master_id", "cluster_id", "cluster_name", "telemetry"} <= set(written)
    assert written["sso_providers"] == []
    master = det.GetMasterResponse(
        version="0.38.1", master_id="m", cluster_id="c", cluster_name="n"
    ).model_dump(mode="json")
    required = {"clusterId", "clusterName", "hasCustomLogo", "masterId", "strictJobQueueControl"}
    assert required | {"version"} <= set(master)
    assert master["rbacEnabled"] is False and master["ssoProviders"] == []
    assert master["product"] == "PRODUCT_UNSPECIFIED"
    user = det.User(id=1, username="a", admin=False, active=True).model_dump(mode="json")
    assert {"id", "username", "admin", "active", "displayName", "remote"} <= set(user)
    listed = det.UserList(users=[], pagination=det.paginate(0, 0, 0)).model_dump(mode="json")
    assert listed["pagination"] == {
        "offset": 0, "limit": 0, "startIndex": 0, "endIndex": 0, "total": 0
    }  # fmt: skip


def test_an_error_has_the_shape_determineds_master_answers_with() -> None:
    assert det.det_error(404, "no such thing").model_dump(mode="json") == {
        "error": {"code": 5, "reason": "NotFound", "error": "no such thing"},
        "code": 5,
        "message": "no such thing",
    }
    assert det.det_error(401, "x").error.reason == "Unauthenticated"
    assert det.det_error(400, "x").error.reason == "InvalidArgument"
    assert det.det_error(500, "x").error.reason == "Internal"


@pytest.mark.parametrize(
    ("total", "offset", "limit", "start", "end"),
    [(5, 0, 0, 0, 5), (5, 2, 2, 2, 4), (5, 4, 10, 4, 5), (5, -2, 0, 3, 5), (5, 5, 1, 5, 5)],
)
def test_a_list_is_paged_as_determineds_master_pages_it(
    total: int, offset: int, limit: int, start: int, end: int
) -> None:
    page = det.paginate(total, offset, limit)
    assert (page.start_index, page.end_index, page.total) == (start, end, total)


@pytest.mark.parametrize("offset", [6, -6])
def test_an_offset_outside_the_list_is_refused_saying_which_would_do(offset: int) -> None:
    with pytest.raises(InvalidRequest, match="give one from -5 to 5"):
        det.paginate(5, offset, 0)


@pytest.mark.parametrize(
    ("text", "overrides"),
    [
        ("", []),
        ("{}\n", []),  # what det continue sends without --config
        ("searcher:\n  max_length:\n    batches: 40\n", ["searcher.max_length.batches=40"]),
        ("name: more\nlabels: [a, b]\n", ['name="more"', 'labels=["a", "b"]']),
    ],
)
def test_a_partial_config_becomes_one_override_per_leaf(text: str, overrides: list[str]) -> None:
    assert det.config_overrides(text) == overrides


def test_a_partial_config_that_is_not_a_map_is_refused() -> None:
    with pytest.raises(InvalidRequest, match="overrideConfig must be a map"):
        det.config_overrides("- 1\n- 2\n")


def test_a_context_sent_as_files_may_list_as_many_as_any_context_holds() -> None:
    from assay.context import MAX_MEMBERS

    assert det.MAX_CONTEXT_FILES == MAX_MEMBERS
