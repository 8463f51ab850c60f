"""``/api/v1/models`` in process on a real master (SQLite): every signed-in user reads, owners
and admins change, bad input answers 400 naming the field, and a registered checkpoint shows
the versions holding it wherever a checkpoint is read."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx

from assay.api import create_app
from assay.config import MasterConfig
from assay.context import pack_context
from assay.db import Database, sqlite_url, tokens, users
from assay.master import Master
from assay.master.identity._users import digest
from tests.unit.master.test_gc_on_demand import _experiment

BASE = "http://127.0.0.1:8080"


def _tokens(master: Master) -> dict[str, str]:
    """An access token of each user (made in the database: hashing passwords is slow and
    tested elsewhere; the requests are signed in by these tokens as by any other)."""
    out: dict[str, str] = {}
    with master.db.session() as s, s.begin():
        for name in ("admin", "alice", "bob"):
            user = users.create(s, username=name, password_hash="-", admin=name == "admin", now=1)
            out[name] = f"assay_token-of-{name}"
            tokens.create(
                s,
                user_id=user.id,
                digest=digest(out[name]),
                kind="access",
                description="",
                now=1.0,
                expires_at=None,
            )
    return out


def test_the_model_routes_answer_each_caller_as_the_rules_say(tmp_path: Path) -> None:
    db = Database(sqlite_url(tmp_path / "assay.db"))
    allowed = {"host_paths": [tmp_path]}  # its checkpoints lie in the test's own directory
    master = Master(MasterConfig(allowed_checkpoint_storage=allowed), db, tmp_path / "home")
    (tmp_path / "ctx").mkdir()
    (tmp_path / "ctx" / "train.py").write_text("print('hi')\n")
    exp_id, _, uuids = _experiment(master, pack_context(tmp_path / "ctx").data, tmp_path / "ck")
    tokens = _tokens(master)
    app = create_app(master)

    async def calls() -> None:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url=BASE) as http:

            async def call(who: str | None, method: str, path: str, **kw: Any) -> httpx.Response:
                headers = {"Authorization": f"Bearer {tokens[who]}"} if who else {}
                return await http.request(method, f"/api/v1{path}", headers=headers, **kw)

            assert (await call(None, "GET", "/models")).status_code == 401
            made = await call("alice", "POST", "/models", json={"name": "mnist"})
            assert made.status_code == 201 and made.json()["owner"] == "alice"
            again = await call("bob", "POST", "/models", json={"name": "mnist"})
            assert again.status_code == 409, again.text
            bad = await call("bob", "POST", "/models", json={"name": "my model/1"})
            assert bad.status_code == 400
            assert [d["path"] for d in bad.json()["error"]["details"]] == ["name"]
            await call("bob", "POST", "/models", json={"name": "resnet"})

            listed = (await call("bob", "GET", "/models", params={"name": "MN"})).json()
            assert [m["name"] for m in listed["models"]] == ["mnist"]
            assert listed["pagination"]["total"] == 1
            assert (await call("bob", "GET", "/models/vgg")).status_code == 404
            patched = await call("bob", "PATCH", "/models/mnist", json={"description": "x"})
            assert patched.status_code == 403 and "belongs to alice" in patched.text
            admin = await call("admin", "PATCH", "/models/mnist", json={"description": "digits"})
            assert admin.json()["description"] == "digits"

            unknown = await call(
                "alice", "POST", "/models/mnist/versions", json={"checkpoint_uuid": "x"}
            )
            assert unknown.status_code == 404 and "checkpoint x not found" in unknown.text
            extra = await call(
                "alice", "POST", "/models/mnist/versions", json={"checkpoint_uuid": "x", "n": 1}
            )
            assert extra.status_code == 400
            theirs = await call(
                "bob", "POST", "/models/mnist/versions", json={"checkpoint_uuid": uuids[0]}
            )
            assert theirs.status_code == 403
            version = await call(
                "alice", "POST", "/models/mnist/versions", json={"checkpoint_uuid": uuids[0]}
            )
            assert version.status_code == 201 and version.json()["version"] == 1
            await call("bob", "POST", "/models/resnet/versions", json={"checkpoint_uuid": uuids[0]})

            held = [{"model": "mnist", "version": 1}, {"model": "resnet", "version": 1}]
            one = (await call("bob", "GET", f"/checkpoints/{uuids[0]}")).json()
            assert one["model_versions"] == held
            listing = (await call("bob", "GET", f"/experiments/{exp_id}/checkpoints")).json()
            assert [c["model_versions"] for c in listing["checkpoints"]] == [held, [], []]
            read = (await call("bob", "GET", "/models/mnist/versions/1")).json()
            assert read["checkpoint"]["uuid"] == uuids[0]
            assert (await call("bob", "GET", "/models/mnist/versions/0")).status_code == 400
            missing = await call("bob", "GET", "/models/mnist/versions/7")
            assert missing.status_code == 404 and "its versions: 1" in missing.text

            assert (await call("bob", "DELETE", "/models/mnist/versions/1")).status_code == 403
            assert (await call("bob", "DELETE", "/models/mnist")).status_code == 403
            gone = await call("alice", "DELETE", "/models/mnist")
            assert gone.json() == {"name": "mnist", "versions": 1}
            one = (await call("bob", "GET", f"/checkpoints/{uuids[0]}")).json()
            assert one["model_versions"] == held[1:] and one["state"] == "ACTIVE"
            mine = await call("bob", "DELETE", "/models/resnet/versions/1")
            assert mine.json()["checkpoint"]["model_versions"] == []

    try:
        asyncio.run(calls())
    finally:
        db.dispose()
