"""The agent's relay of its trials' metric reports, with the harness's client on its real socket:
a batch goes at once, those that come soon after gather into one message, each trial hears its
own outcome, nothing waits forever."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from assay.agent import ReportRelay
from assay.agent import _relay as relay_module
from assay.core._relay import RelayClient, RelayGone
from assay.errors import Fenced, InvalidRequest
from assay.protocol import RelayedReports, RelayOutcome, ReportsAck

REPORT = {"group": "training", "steps_completed": 1, "metrics": {"loss": 0.5}}
FENCED = {"type": "Fenced", "message": "allocation 3.1 has ended", "details": []}


class Master:
    """The master's end of the agent's connection: what it was sent, and its answers."""

    def __init__(self) -> None:
        self.sent: list[RelayedReports] = []
        self.online = True
        self.relay: ReportRelay | None = None
        self.outcome: Callable[[int], RelayOutcome] = lambda trial_id: RelayOutcome(204)
        self.answers = True

    async def send(self, message: RelayedReports) -> bool:
        if not self.online:
            return False
        self.sent.append(message)
        if self.answers:
            assert self.relay is not None
            outcomes = [self.outcome(b.trial_id) for b in message.batches]
            asyncio.get_running_loop().call_soon(
                self.relay.acknowledged, ReportsAck(message.seq, outcomes)
            )
        return True


async def with_relay(
    test: Callable[[ReportRelay, Master], Awaitable[None]], *, relay: bool = True
) -> None:
    master = Master()
    agent = ReportRelay(master.send)
    master.relay = agent
    await agent.open()
    runner = asyncio.create_task(agent.run())
    agent.connected(relay)
    try:
        await test(agent, master)
    finally:
        runner.cancel()
        await agent.close()


def post(relay: ReportRelay, trial_id: int, timeout: float = 5.0) -> Any:
    """A trial's reporter thread posting one batch."""
    client = RelayClient(relay.address, f"token-{trial_id}", timeout=timeout)
    try:
        return client.post(trial_id, [dict(REPORT, steps_completed=trial_id)])
    finally:
        client.close()


def test_trials_batches_go_in_one_message_and_each_trial_hears_its_own_outcome(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What comes within the gathering time of the last message goes in one message (a
    gathering time of 2 s here, longer than the two trials take to post)."""
    monkeypatch.setattr(relay_module, "FLUSH_SECONDS", 2.0)

    async def test(relay: ReportRelay, master: Master) -> None:
        assert await asyncio.to_thread(post, relay, 9) is True  # the first: at once
        master.outcome = lambda t: RelayOutcome(409, FENCED) if t == 2 else RelayOutcome(204)
        first = asyncio.to_thread(post, relay, 1)
        second = asyncio.to_thread(post, relay, 2)
        answers = await asyncio.gather(first, second, return_exceptions=True)
        assert answers[0] is True
        assert isinstance(answers[1], Fenced)
        assert "has ended" in answers[1].message
        assert len(master.sent) == 2
        batches = master.sent[1].batches
        assert sorted((b.trial_id, b.token) for b in batches) == [(1, "token-1"), (2, "token-2")]

    asyncio.run(with_relay(test))


def test_a_report_goes_at_once_when_no_message_went_within_the_gathering_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A trial's last report, which its process waits for before it exits, does not wait for
    others to gather (a gathering time of a minute here, longer than the client's patience)."""
    monkeypatch.setattr(relay_module, "FLUSH_SECONDS", 60.0)

    async def test(relay: ReportRelay, master: Master) -> None:
        assert await asyncio.to_thread(post, relay, 4) is True
        assert [[b.trial_id for b in m.batches] for m in master.sent] == [[4]]

    asyncio.run(with_relay(test))


def test_a_batch_sent_before_the_master_went_away_is_sent_again_when_it_is_back() -> None:
    async def test(relay: ReportRelay, master: Master) -> None:
        master.answers = False
        trial = asyncio.ensure_future(asyncio.to_thread(post, relay, 7, 10.0))
        while not master.sent:
            await asyncio.sleep(0.01)
        relay.disconnected()  # the answer is lost with the connection
        master.answers = True
        relay.connected(True)
        assert await trial is True
        assert [m.batches[0].trial_id for m in master.sent] == [7, 7]
        assert master.sent[0].seq != master.sent[1].seq

    asyncio.run(with_relay(test))


def test_batches_wait_while_the_master_is_away() -> None:
    async def test(relay: ReportRelay, master: Master) -> None:
        relay.disconnected()
        master.online = False
        trial = asyncio.ensure_future(asyncio.to_thread(post, relay, 4))
        await asyncio.sleep(0.5)
        assert not trial.done() and not master.sent
        master.online = True
        relay.connected(True)
        assert await trial is True

    asyncio.run(with_relay(test))


def test_a_master_that_takes_no_relayed_reports_has_the_trial_send_its_own() -> None:
    async def test(relay: ReportRelay, master: Master) -> None:
        assert await asyncio.to_thread(post, relay, 5) is False
        assert master.sent == []

    asyncio.run(with_relay(test, relay=False))


def test_an_agent_that_does_not_answer_is_given_up_on_after_the_clients_patience() -> None:
    async def test(relay: ReportRelay, master: Master) -> None:
        master.answers = False  # as a frozen agent's master never answers
        with pytest.raises(RelayGone) as gone:
            await asyncio.to_thread(post, relay, 6, 0.5)
        assert not gone.value.for_good

    asyncio.run(with_relay(test))


def test_no_relay_at_the_address_is_given_up_on_for_good() -> None:
    client = RelayClient("@assay-relay-nobody-listens-here", "token")
    with pytest.raises(RelayGone) as gone:
        client.post(1, [REPORT])
    assert gone.value.for_good


def watch(relay: ReportRelay, allocation_id: str, wait: float) -> bool | None:
    """A trial's preemption watcher asking its agent once."""
    client = RelayClient(relay.address, "token", timeout=5.0)
    try:
        return client.preemption(allocation_id, wait)
    finally:
        client.close()


def test_a_preemption_the_master_tells_the_agent_wakes_its_trials_watch_at_once() -> None:
    async def test(relay: ReportRelay, master: Master) -> None:
        assert await asyncio.to_thread(watch, relay, "1.1", 0) is False
        waiting = asyncio.ensure_future(asyncio.to_thread(watch, relay, "1.1", 60))
        await asyncio.sleep(0.2)
        assert not waiting.done()
        relay.preempt("2.1")  # another allocation's: this watch waits on
        await asyncio.sleep(0.2)
        assert not waiting.done()
        began = asyncio.get_running_loop().time()
        relay.preempt("1.1")
        assert await waiting is True
        assert asyncio.get_running_loop().time() - began < 5
        # Told once, it holds for later questions, until the allocation is forgotten.
        assert await asyncio.to_thread(watch, relay, "1.1", 0) is True
        relay.forget("1.1")
        assert await asyncio.to_thread(watch, relay, "1.1", 0) is False

    asyncio.run(with_relay(test))


def test_a_watch_not_told_answers_no_after_its_wait() -> None:
    async def test(relay: ReportRelay, master: Master) -> None:
        began = asyncio.get_running_loop().time()
        assert await asyncio.to_thread(watch, relay, "1.1", 0.5) is False
        assert asyncio.get_running_loop().time() - began >= 0.5

    asyncio.run(with_relay(test))


def test_a_master_that_tells_no_preemptions_has_the_trial_ask_it_itself() -> None:
    async def test(relay: ReportRelay, master: Master) -> None:
        assert await asyncio.to_thread(watch, relay, "1.1", 30) is None

    asyncio.run(with_relay(test, relay=False))


def test_a_bad_watch_is_answered_with_what_was_wrong() -> None:
    async def test(relay: ReportRelay, master: Master) -> None:
        client = RelayClient(relay.address, "token", timeout=5.0)
        try:
            with pytest.raises(InvalidRequest, match="wait"):
                await asyncio.to_thread(client.preemption, "1.1", -1)
        finally:
            client.close()

    asyncio.run(with_relay(test))


def test_checkpoints_go_in_messages_of_their_own_so_reports_never_wait_for_them() -> None:
    async def test(relay: ReportRelay, master: Master) -> None:
        def register(trial_id: int) -> Any:
            client = RelayClient(relay.address, f"token-{trial_id}", timeout=5.0)
            try:
                return client.post(trial_id, checkpoint={"uuid": f"c{trial_id}"})
            finally:
                client.close()

        relay.disconnected()  # they gather while the master is away, then go at once
        asked = asyncio.gather(
            asyncio.to_thread(post, relay, 1),
            asyncio.to_thread(register, 2),
            asyncio.to_thread(post, relay, 3),
        )
        for _ in range(200):
            if len(relay._waiting) == 3:
                break
            await asyncio.sleep(0.01)
        relay.connected(True)
        assert await asked == [True, True, True]
        kinds = sorted(
            sorted((b.checkpoint is not None, b.trial_id) for b in m.batches) for m in master.sent
        )
        assert kinds == [[(False, 1), (False, 3)], [(True, 2)]]

    asyncio.run(with_relay(test))


def test_a_checkpoint_goes_at_once_not_after_the_gathering_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Its trial waits for it between two steps: a checkpoint does not wait for the batches
    to gather after the message before it (here a minute, longer than the client's
    patience)."""
    monkeypatch.setattr(relay_module, "FLUSH_SECONDS", 60.0)

    async def test(relay: ReportRelay, master: Master) -> None:
        assert await asyncio.to_thread(post, relay, 9) is True  # a message just went
        master.sent.clear()
        client = RelayClient(relay.address, "token-1", timeout=5.0)
        try:
            stored = await asyncio.to_thread(client.post, 1, checkpoint={"uuid": "c1"})
        finally:
            client.close()
        assert stored is True
        assert [b.checkpoint for m in master.sent for b in m.batches] == [{"uuid": "c1"}]

    asyncio.run(with_relay(test))
