"""A master whose config turns Prometheus off (Determined's ``observability.enable_prometheus:
false``) answers ``/metrics`` 404 saying so; a scrape token shorter than a secret should be is
refused in the config, naming its key."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from assay.api import create_app
from assay.config import MasterConfig, validate_as
from assay.db import Database, sqlite_url
from assay.errors import InvalidConfig
from assay.master import Master


def test_metrics_turned_off_answer_404_naming_the_key(tmp_path: Path) -> None:
    settings = MasterConfig.model_validate({"observability": {"enable_prometheus": False}})
    db = Database(sqlite_url(tmp_path / "assay.db"))
    app = create_app(Master(settings, db, tmp_path))

    async def get() -> httpx.Response:
        transport = httpx.ASGITransport(app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
            return await c.get("/metrics")

    try:
        answer = asyncio.run(get())
    finally:
        db.dispose()
    assert answer.status_code == 404
    assert "observability.enable_prometheus" in answer.json()["error"]["message"]


def test_a_short_scrape_token_is_refused_with_its_key() -> None:
    with pytest.raises(InvalidConfig) as refused:
        validate_as(MasterConfig, {"observability": {"scrape_token": "short"}}, what="master")
    (detail,) = refused.value.details
    assert detail.path == "observability.scrape_token"
