"""Determined's API under ``/det`` in process on a real master (SQLite): the master's info,
signing in by Determined's client-side hash (and by the plain password), users, and every
other request answered in Determined's error shape, never the web UI's page, never a 5xx.

The real ``det`` drives the same routes in ``tests/integration/test_det_cli.py``."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from assay.api import create_app
from assay.config import MasterConfig
from assay.db import Database, sqlite_url, users
from assay.master import Master
from assay.master.identity._passwords import hash_password
from assay.rest import determined as det

BASE = "http://127.0.0.1:8080"
ADMIN_PASSWORD = "Admin-pass-1"


@pytest.fixture(scope="module")
def master(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Master]:
    """A master whose admin was made as a first start makes it, and a user ``old`` whose
    password was set before the master kept a hash for Determined's clients."""
    home = tmp_path_factory.mktemp("det")
    db = Database(sqlite_url(home / "assay.db"))
    m = Master(MasterConfig(), db, home / "home")
    m.core.cluster_id = "c0ffee"
    asyncio.run(m.users.ensure_admin(ADMIN_PASSWORD))
    old = hash_password("Old-pass-12")
    with db.session() as s, s.begin():
        users.create(s, username="old", password_hash=old, admin=False, now=1.0)
    yield m
    db.dispose()


_APPS: dict[int, FastAPI] = {}


def calls(master: Master, *requests: tuple[str, str, dict[str, Any]]) -> list[httpx.Response]:
    """The answers to ``requests`` (method, path, httpx keywords), made in order (by one app
    per master: making one costs more than the requests)."""
    app = _APPS.setdefault(id(master), create_app(master))

    async def run() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url=BASE) as http:
            return [await http.request(m, p, **kw) for m, p, kw in requests]

    return asyncio.run(run())


def call(master: Master, method: str, path: str, **kw: Any) -> httpx.Response:
    return calls(master, (method, path, kw))[0]


def login(master: Master, username: str, password: str, *, hashed: bool = True) -> httpx.Response:
    sent = det.client_hash(password) if hashed else password
    body = {"username": username, "password": sent, "isHashed": hashed}
    # As Determined's CLI sends it: JSON with no Content-Type.
    return call(master, "POST", "/det/api/v1/auth/login", content=det_json(body))


def det_json(body: dict[str, Any]) -> bytes:
    import json

    return json.dumps(body).encode()


def bearer(token: str) -> dict[str, Any]:
    return {"headers": {"Authorization": f"Bearer {token}"}}


def refusal(answer: httpx.Response, status: int) -> str:
    """The message of an error answer in Determined's shape, checked whole."""
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"] == "application/json"
    body = det.DetError.model_validate(answer.json())
    assert body.error.error == body.message and body.code == body.error.code
    return body.message


def test_info_says_the_determined_version_it_speaks_to_anyone(master: Master) -> None:
    info, about = calls(master, ("GET", "/det/info", {}), ("GET", "/det/api/v1/master", {}))
    assert info.json()["version"] == det.DETERMINED_VERSION == "0.38.1"
    assert info.json()["cluster_id"] == "c0ffee" and info.json()["sso_providers"] == []
    assert about.json()["clusterId"] == "c0ffee" and about.json()["rbacEnabled"] is False


def test_a_determined_client_signs_in_by_its_hash_and_reads_users(master: Master) -> None:
    signed = login(master, "admin", ADMIN_PASSWORD)
    assert signed.status_code == 200, signed.text
    token = det.LoginResponse.model_validate(signed.json()).token
    me, listed, one, named, page = calls(
        master,
        ("GET", "/det/api/v1/me", bearer(token)),
        ("GET", "/det/api/v1/users", bearer(token)),
        ("GET", "/det/api/v1/users/1", bearer(token)),
        ("GET", "/det/api/v1/users/old/by-username", bearer(token)),
        ("GET", "/det/api/v1/users?offset=-1&limit=1&active=true", bearer(token)),
    )
    assert me.json()["user"]["username"] == "admin" and me.json()["user"]["admin"] is True
    assert [u["username"] for u in listed.json()["users"]] == ["admin", "old"]
    assert listed.json()["pagination"]["endIndex"] == listed.json()["pagination"]["total"] == 2
    assert one.json()["user"]["username"] == "admin"
    assert named.json()["user"]["id"] == 2
    assert [u["username"] for u in page.json()["users"]] == ["old"]
    # The session is assay's own: assay's API takes it too, until it is signed out.
    assert call(master, "GET", "/api/v1/me", **bearer(token)).json()["username"] == "admin"
    out = call(master, "POST", "/det/api/v1/auth/logout", **bearer(token))
    assert out.status_code == 200 and out.json() == {}
    assert "sign in" in refusal(call(master, "GET", "/det/api/v1/me", **bearer(token)), 401)


def test_wrong_credentials_are_refused_in_determineds_shape(master: Master) -> None:
    for username, password in (("admin", "wrong"), ("nobody", ADMIN_PASSWORD)):
        assert "invalid credentials" in refusal(login(master, username, password), 401)
    assert "sign in" in refusal(call(master, "GET", "/det/api/v1/users"), 401)
    missing = call(master, "GET", "/det/api/v1/users/99", **bearer(signed_in(master)))
    assert "user 99 not found" in refusal(missing, 404)


def signed_in(master: Master) -> str:
    return str(login(master, "admin", ADMIN_PASSWORD).json()["token"])


def test_a_user_from_before_signs_in_once_with_assay_then_with_determineds_hash(
    master: Master,
) -> None:
    said = refusal(login(master, "old", "Old-pass-12"), 409)
    assert "sign in once with `assay user login old`" in said and "\n" not in said
    # The plain password (isHashed false) is checked against assay's own hash.
    assert login(master, "old", "Old-pass-12", hashed=False).status_code == 200
    assert login(master, "old", "Old-pass-12").status_code == 200
    assert login(master, "old", "wrong").status_code == 401


@pytest.mark.parametrize("method", ["GET", "POST", "PUT", "PATCH", "DELETE"])
def test_every_other_request_is_404_naming_it_and_assays_own_command(
    master: Master, method: str
) -> None:
    said = refusal(call(master, method, "/det/api/v1/nothing/here"), 404)
    assert said.startswith(f"{method} /api/v1/nothing/here is part of Determined's API")
    assert "does not serve yet" in said
    tensorboards = refusal(call(master, "GET", "/det/api/v1/tensorboards"), 404)
    assert "`assay tensorboard`" in tensorboards
    assert refusal(call(master, method, "/det"), 404).startswith(f"{method} / ")


def test_a_method_a_served_path_does_not_take_is_405_naming_those_it_takes(
    master: Master,
) -> None:
    answer = call(master, "DELETE", "/det/api/v1/auth/login")
    assert refusal(answer, 405) == "DELETE is not a method of /api/v1/auth/login; it takes POST"
    assert answer.headers["allow"] == "POST"
    # `det user create`: assay's own command for it, too.
    create = call(master, "POST", "/det/api/v1/users", **bearer(signed_in(master)))
    said = refusal(create, 405)
    assert said.startswith("POST is not a method of /api/v1/users; it takes GET")
    assert said.endswith("assay's own command for it: `assay user create USERNAME`")


def test_bad_bodies_and_parameters_are_400_saying_what_was_wrong(master: Master) -> None:
    for body, says in (
        (b"[]", "the body must be a JSON object of the request's fields, got an array"),
        (b'{"username": ', "the body is not valid JSON"),
        (b'{"username": "a", "password": "b", "isHashed": "yes"}', "isHashed: "),
    ):
        assert says in refusal(call(master, "POST", "/det/api/v1/auth/login", content=body), 400)
    token = signed_in(master)
    far = call(master, "GET", "/det/api/v1/users?offset=9", **bearer(token))
    assert "give one from -2 to 2" in refusal(far, 400)
    assert "limit" in refusal(
        call(master, "GET", "/det/api/v1/users?limit=x", **bearer(token)), 400
    )


def test_assays_own_api_document_leaves_determineds_out(master: Master) -> None:
    paths = call(master, "GET", "/openapi.json").json()["paths"]
    assert paths and not [p for p in paths if p.startswith("/det")]


PATHS = st.lists(
    st.one_of(st.sampled_from(["api", "v1", "info", "users", "me", "1", "..", "%00"]), st.text()),
    max_size=5,
).map(lambda parts: "/det/" + "/".join(parts))


@given(
    method=st.sampled_from(["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"]),
    path=PATHS,
    body=st.one_of(st.none(), st.binary(max_size=64), st.text(max_size=64).map(str.encode)),
)
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
def test_nothing_under_det_answers_5xx_or_html(
    master: Master, method: str, path: str, body: bytes | None
) -> None:
    try:
        # A client sends what its URL is once normalized: `/det/..` is `/`, the web UI's.
        assume(httpx.URL(BASE + path).path.startswith("/det"))
        answer = call(master, method, path, content=body)
    except httpx.InvalidURL:
        return  # not a URL a client could send
    assert answer.status_code < 500, (method, path, answer.text)
    if method != "HEAD" and answer.status_code >= 400:
        refusal(answer, answer.status_code)
    assert "text/html" not in answer.headers.get("content-type", "")
