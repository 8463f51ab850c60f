"""Raising ``assay.InvalidHP`` inside the context ends the trial cleanly; other errors still
propagate. (On a cluster, ``tests/integration/test_searchers.py`` shows the searcher replacing
such a trial.)"""

from __future__ import annotations

import logging

import pytest

import assay
from assay.errors import AssayError


def test_invalid_hp_raised_inside_the_context_is_reported_and_swallowed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="assay.core")
    with assay.core.init():
        raise assay.InvalidHP("lr = 10 diverges")
    # Off-cluster the early exit is logged rather than sent to a master.
    assert "invalid hyperparameters: lr = 10 diverges" in caplog.text
    assert "early exit: INVALID_HP" in caplog.text


def test_invalid_hp_without_a_message_still_says_why_the_trial_ended(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="assay.core")
    with assay.core.init():
        raise assay.InvalidHP()
    assert "invalid hyperparameters: no reason given" in caplog.text


def test_other_errors_inside_the_context_propagate() -> None:
    with pytest.raises(ZeroDivisionError), assay.core.init():
        _ = 1 / 0


def test_invalid_hp_is_an_assay_error() -> None:
    assert issubclass(assay.InvalidHP, AssayError)
