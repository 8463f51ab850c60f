"""A user's custom searcher runs in a real subprocess; its failures fail the search, not us."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from assay.master.kernel._custom_searcher import CustomSearchMethod
from assay.protocol import ExitedReason
from assay.searcher import Close, Create, Searcher, Shutdown, ValidateAfter
from assay.searcher.testing import check_method

HPARAMS = {"lr": {"type": "double", "minval": 0.0, "maxval": 1.0}, "depth": 3}

USER_SEARCHER = '''
from assay.searcher import SearchContext


class TwoAtATime:
    """Runs max_trials trials of 10 units, two at a time."""

    def __init__(self):
        self.created = 0
        self.ended = 0
        self.max_trials = 5

    def _new(self, ctx):
        self.created += 1
        return ctx.create_trial(ctx.sample())

    def initial_operations(self, ctx):
        print("this print must not break the protocol")
        return [self._new(ctx), self._new(ctx)]

    def on_trial_created(self, ctx, request_id):
        return [ctx.validate_after(request_id, 10)]

    def on_validation_completed(self, ctx, request_id, metric, length):
        if metric > 1e6:
            raise RuntimeError("metric exploded")
        return [ctx.close(request_id)]

    def _ended(self, ctx):
        self.ended += 1
        ops = [self._new(ctx)] if self.created < self.max_trials else []
        if self.ended == self.created and self.created >= self.max_trials:
            ops.append(ctx.shutdown())
        return ops

    def on_trial_closed(self, ctx, request_id):
        return self._ended(ctx)

    def on_trial_exited_early(self, ctx, request_id, reason):
        if reason == "invalid_hp":
            self.created -= 1
        return self._ended(ctx)

    def progress(self, ctx):
        return self.ended / self.max_trials

    def save_state(self):
        return {"created": self.created, "ended": self.ended}

    def load_state(self, state):
        self.created = state["created"]
        self.ended = state["ended"]
'''


@pytest.fixture
def context_dir(tmp_path: Path) -> Path:
    (tmp_path / "my_searcher.py").write_text(textwrap.dedent(USER_SEARCHER))
    return tmp_path


def _method(context_dir: Path, class_path: str = "my_searcher:TwoAtATime") -> CustomSearchMethod:
    return CustomSearchMethod(class_path, context_dir, seed=42, hyperparameters=HPARAMS, timeout=20)


def test_custom_searcher_drives_trials_from_its_subprocess(context_dir: Path) -> None:
    method = _method(context_dir)
    try:
        searcher = Searcher(method)
        ops = searcher.initial_operations()
        creates = [op for op in ops if isinstance(op, Create)]
        assert len(creates) == 2
        assert creates[0].hparams["depth"] == 3 and 0 <= creates[0].hparams["lr"] <= 1
        assert ValidateAfter(creates[0].request_id, 10) in ops
        assert searcher.validation_completed(creates[0].request_id, 0.5, 10) == [
            Close(creates[0].request_id)
        ]
        assert searcher.progress() == 0.0
        after = searcher.trial_closed(creates[0].request_id)
        assert len([op for op in after if isinstance(op, Create)]) == 1
        assert searcher.progress() == pytest.approx(0.2)
    finally:
        method.close()


def test_custom_searcher_passes_the_conformance_kit(context_dir: Path) -> None:
    methods: list[CustomSearchMethod] = []

    def make() -> Searcher:
        methods.append(_method(context_dir))
        return Searcher(methods[-1])

    try:
        check_method(make, seed=5, max_trials=5, max_concurrent=2, restore_points=1)
    finally:
        for method in methods:
            method.close()


def test_a_raising_user_searcher_fails_the_search_with_its_traceback(context_dir: Path) -> None:
    method = _method(context_dir)
    try:
        searcher = Searcher(method)
        (first, _) = [op for op in searcher.initial_operations() if isinstance(op, Create)]
        ops = searcher.validation_completed(first.request_id, 1e9, 10)
        assert len(ops) == 1 and isinstance(ops[0], Shutdown) and ops[0].failure
        assert "RuntimeError: metric exploded" in ops[0].message
        assert "my_searcher.py" in ops[0].message
        assert searcher.trial_closed(first.request_id) == []
    finally:
        method.close()


def test_a_crashing_worker_fails_the_search_with_its_stderr(context_dir: Path) -> None:
    (context_dir / "crash.py").write_text(
        "import os, sys\n"
        "class Crash:\n"
        "    def initial_operations(self, ctx):\n"
        "        sys.stderr.write('going down hard\\n'); sys.stderr.flush()\n"
        "        os._exit(3)\n"
        "    def progress(self, ctx): return 0.0\n"
        "    def save_state(self): return None\n"
    )
    method = _method(context_dir, "crash:Crash")
    try:
        ops = method.initial_operations()
        assert len(ops) == 1 and isinstance(ops[0], Shutdown) and ops[0].failure
        assert "exit code 3" in ops[0].message and "going down hard" in ops[0].message
    finally:
        method.close()


def test_an_unknown_class_fails_the_search_saying_which(context_dir: Path) -> None:
    method = _method(context_dir, "my_searcher:Missing")
    try:
        (op,) = method.initial_operations()
        assert isinstance(op, Shutdown) and op.failure
        assert "has no attribute 'Missing'" in op.message
    finally:
        method.close()


def test_restored_custom_searcher_resumes_from_the_saved_state(context_dir: Path) -> None:
    first = _method(context_dir)
    second = _method(context_dir)
    try:
        searcher = Searcher(first)
        creates = [op for op in searcher.initial_operations() if isinstance(op, Create)]
        searcher.trial_exited_early(creates[0].request_id, ExitedReason.ERRORED)
        state = json.loads(json.dumps(searcher.snapshot()))
        assert state["method"]["state"]["user"] == {"created": 3, "ended": 1}
        restored = Searcher(second)
        restored.restore(state)
        ops = restored.trial_closed(creates[1].request_id)
        assert second.state["user"] == {"created": 4, "ended": 2}
        assert len([op for op in ops if isinstance(op, Create)]) == 1
    finally:
        first.close()
        second.close()
