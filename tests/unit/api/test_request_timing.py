"""Every answer is timed by the OpenAPI path it matched; one slower than the bound is logged
with its figures, but a long-poll (slow by design) is not."""

from __future__ import annotations

import asyncio
import logging

import httpx
import pytest
from fastapi import FastAPI

from assay.api import _metrics
from assay.api._methods import DocumentedPaths
from assay.api._metrics import RequestTiming
from assay.master.kernel import Measures


def _app(measures: Measures) -> RequestTiming:
    app = FastAPI()

    @app.get("/api/v1/things/{thing_id}")
    async def thing(thing_id: int) -> dict[str, int]:
        await asyncio.sleep(0.05)
        return {"id": thing_id}

    @app.get("/api/v1/things/{thing_id}/wait")
    async def wait(thing_id: int) -> dict[str, int]:
        await asyncio.sleep(0.05)
        return {"id": thing_id}

    return RequestTiming(app, measures=measures, paths=DocumentedPaths(lambda: app.routes))


def test_answers_are_timed_by_route_and_slow_ones_logged_but_not_long_polls(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(_metrics, "SLOW_REQUEST_SECONDS", 0.01)
    measures = Measures()

    async def get(*paths: str) -> None:
        transport = httpx.ASGITransport(_app(measures))
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            for path in paths:
                await client.get(path)

    with caplog.at_level(logging.WARNING, logger="assay.api._metrics"):
        asyncio.run(get("/api/v1/things/1", "/api/v1/things/2", "/api/v1/things/3/wait", "/x"))
    count = measures.registry.get_sample_value
    labels = {"method": "GET", "route": "/api/v1/things/{thing_id}", "status": "200"}
    assert count("assay_http_request_duration_seconds_count", labels) == 2
    assert (
        count(
            "assay_http_request_duration_seconds_count",
            {**labels, "route": "other", "status": "404"},
        )
        == 1
    )
    slow = [r for r in caplog.records if r.getMessage().startswith("slow request")]
    assert len(slow) == 2
    assert all(r.route == "/api/v1/things/{thing_id}" for r in slow)
