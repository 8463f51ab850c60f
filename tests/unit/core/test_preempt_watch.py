"""The preemption watcher starts at the first question, and outlives an answer it cannot read:
it logs it and asks again, so a later "yes" still reaches the trial. (The real master never
sends such an answer; a loopback server plays a master that does.)"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator

import pytest

from assay.agent import ReportRelay
from assay.core._preempt import PreemptContext
from assay.core._session import MasterSession
from assay.protocol import RELAY_ENV
from tests.http_stub import QuietHandler, serving

ANSWERS = [{"preempt": None}, {"preempt": "soon"}, {"preempt": True}]
"""No (null reads as false), garbled, yes."""


@pytest.fixture
def master() -> Iterator[tuple[str, list[str]]]:
    asked: list[str] = []
    answers = iter(ANSWERS)

    class Handler(QuietHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server calls it by this name)
            asked.append(self.path)
            body = json.dumps(next(answers, {"preempt": True})).encode()
            self.answer(body, "application/json")

    with serving(Handler) as url:
        yield url, asked


def test_a_malformed_answer_is_skipped_and_the_next_yes_is_seen(
    master: tuple[str, list[str]], caplog: pytest.LogCaptureFixture
) -> None:
    url, asked = master
    ctx = PreemptContext(MasterSession(url, "token"), "1.1")
    assert not ctx.should_preempt(), "the first answer said no"
    assert ctx._thread is not None
    ctx._thread.join(timeout=30)
    assert ctx.should_preempt(), "the third answer said yes"
    assert len(asked) == 3
    assert "timeout_seconds=0" in asked[0], "the first question is answered at once"
    assert caplog.text.count("preemption check failed") == 1, caplog.text


def test_nothing_is_asked_until_the_code_asks(master: tuple[str, list[str]]) -> None:
    url, asked = master
    ctx = PreemptContext(MasterSession(url, "token"), "1.1")
    ctx.close()
    assert ctx._thread is None
    assert asked == []


def test_a_first_question_the_master_cannot_answer_is_no_and_left_to_the_watcher(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Port 1 on loopback: nothing listens, the connection is refused at once.
    ctx = PreemptContext(MasterSession("http://127.0.0.1:1", "token"), "1.1")
    with caplog.at_level(logging.WARNING, logger="assay.core"):
        assert not ctx.should_preempt()
    ctx.close()
    assert ctx._thread is not None, "the watcher goes on asking"
    assert "preemption check failed" not in caplog.text, "a master away for a moment is no news"


def watching_through_a_relay(
    url: str, monkeypatch: pytest.MonkeyPatch, relays: bool, told: bool
) -> bool:
    """What a trial's ``should_preempt()`` says when its agent's relay answers (its master
    relays or not), once the master told the agent (``told``), or after a few seconds."""

    async def main() -> bool:
        async def send(_message: object) -> bool:
            return True

        relay = ReportRelay(send)
        await relay.open()
        relay.connected(relays)
        monkeypatch.setenv(RELAY_ENV, relay.address)
        ctx = PreemptContext(MasterSession(url, "token"), "1.1")
        try:
            if await asyncio.to_thread(ctx.should_preempt) or not told:
                return ctx.should_preempt()
            relay.preempt("1.1")
            for _ in range(100):
                if await asyncio.to_thread(ctx.should_preempt):
                    break
                await asyncio.sleep(0.05)
            return ctx.should_preempt()
        finally:
            ctx.close()
            await relay.close()

    return asyncio.run(main())


def test_a_trial_with_an_agent_relay_hears_its_preemption_from_the_agent_and_never_asks_the_master(
    master: tuple[str, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The master tells the agent (``Preempt``); the trial's watcher waits on the agent's relay,
    so no long poll is held open on the master."""
    url, asked = master
    assert watching_through_a_relay(url, monkeypatch, relays=True, told=True)
    assert asked == []


def test_an_agent_whose_master_tells_no_preemptions_has_the_trial_ask_the_master(
    master: tuple[str, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, asked = master
    assert not watching_through_a_relay(url, monkeypatch, relays=False, told=False)
    assert asked and "timeout_seconds=0" in asked[0]
