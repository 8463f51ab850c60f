"""The sliding-window rate limiter against a plain model of what it promises, on a test clock."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assay.api._ratelimit import RateLimiter


class Clock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_the_limit_is_reached_then_lifted_when_the_window_passes() -> None:
    clock = Clock()
    limiter = RateLimiter(3, 60.0, clock)
    assert [limiter.allow("alice") for _ in range(4)] == [True, True, True, False]
    assert limiter.retry_after("alice") == 60.0
    clock.now += 59.0
    assert not limiter.allow("alice")
    assert limiter.retry_after("alice") == 1.0
    clock.now += 1.0
    assert limiter.retry_after("alice") == 0.0
    assert limiter.allow("alice")


def test_keys_are_limited_apart() -> None:
    limiter = RateLimiter(1, 10.0, Clock())
    assert limiter.allow("alice")
    assert not limiter.allow("alice")
    assert limiter.allow("bob")


def test_refused_attempts_do_not_push_the_window_on() -> None:
    clock = Clock()
    limiter = RateLimiter(1, 10.0, clock)
    assert limiter.allow("k")
    for _ in range(9):
        clock.now += 1.0
        assert not limiter.allow("k")
    clock.now += 1.0
    assert limiter.allow("k")


@pytest.mark.parametrize(("limit", "window"), [(0, 1.0), (1, 0.0), (1, -1.0), (1, float("nan"))])
def test_a_limiter_that_could_never_allow_anything_is_refused(limit: int, window: float) -> None:
    with pytest.raises(ValueError):
        RateLimiter(limit, window, Clock())


def test_a_flood_of_distinct_keys_does_not_stay_in_memory() -> None:
    clock = Clock()
    limiter = RateLimiter(5, 1.0, clock)
    for i in range(100_000):
        if i % 1000 == 0:
            clock.now += 2.0
        limiter.allow(f"user-{i}")
    assert len(limiter) <= 4096


# Times are whole numbers of milliseconds, so that the model's arithmetic and the limiter's
# agree exactly on whether an attempt is inside the window.
events = st.lists(st.tuples(st.integers(0, 5_000), st.sampled_from(["a", "b", "c"])), max_size=200)


@given(limit=st.integers(1, 6), window_ms=st.integers(1, 3_000), steps=events)
def test_an_attempt_is_allowed_exactly_when_fewer_than_limit_were_in_the_window(
    limit: int, window_ms: int, steps: list[tuple[int, str]]
) -> None:
    clock = Clock(0.0)
    limiter = RateLimiter(limit, float(window_ms), clock)
    allowed: dict[str, list[float]] = {}
    for gap, key in steps:
        clock.now += gap
        recent = [t for t in allowed.get(key, []) if t > clock.now - window_ms]
        expected_wait = 0.0 if len(recent) < limit else recent[0] + window_ms - clock.now
        assert limiter.retry_after(key) == expected_wait
        ok = limiter.allow(key)
        assert ok == (len(recent) < limit)
        if ok:
            allowed.setdefault(key, []).append(clock.now)


@given(limit=st.integers(1, 6), window_ms=st.integers(1, 3_000), steps=events)
def test_waiting_retry_after_is_enough_and_no_window_holds_more_than_limit(
    limit: int, window_ms: int, steps: list[tuple[int, str]]
) -> None:
    clock = Clock(0.0)
    limiter = RateLimiter(limit, float(window_ms), clock)
    allowed: dict[str, list[float]] = {}
    for gap, key in steps:
        clock.now += gap
        if not limiter.allow(key):
            clock.now += limiter.retry_after(key)
            assert limiter.allow(key), "waiting retry_after lets the next attempt in"
        allowed.setdefault(key, []).append(clock.now)
    for times in allowed.values():
        for i, start in enumerate(times):
            inside = [t for t in times[i:] if t < start + window_ms]
            assert len(inside) <= limit
