"""Where ``import nni`` runs: in a trial of an assay experiment (the harness), or standalone.

Under assay, results are validation metrics: intermediate result ``k`` is reported at step
``k``, the final result at the step after the last intermediate one, marked final (an NNI
experiment ranks its trials by it, as NNI does). The metrics carry the
result under ``default`` and, when the experiment's searcher metric has another name, under
that name too. When the master asks the trial to stop (early stopping, a pause, the
experiment's time limit), NNI trial code cannot notice: the next report ends the process
cleanly, as NNI's manager would end it.
"""

from __future__ import annotations

import atexit
import json
import logging
import math
import os
import sys
from pathlib import Path
from typing import Any

log = logging.getLogger("nni")

DEFAULT = "default"

TRIAL_BUDGET = "TRIAL_BUDGET"
"""The parameter NNI's Hyperband and BOHB advisors give each trial its budget in."""


def _value(metric: Any, where: str) -> tuple[float, dict[str, Any]]:
    """The number a result stands for, and the metrics to report."""
    if isinstance(metric, dict):
        if DEFAULT not in metric:
            raise ValueError(f"{where}: a dict result needs a 'default' key, got {sorted(metric)}")
        number, metrics = metric[DEFAULT], dict(metric)
    else:
        number, metrics = metric, {DEFAULT: metric}
    if isinstance(number, bool) or not isinstance(number, int | float):
        raise TypeError(f"{where}: the result must be a number, got {number!r}")
    return float(number), metrics


class _Standalone:
    """No assay trial around: NNI's behaviour without a manager (parameters from NNI's own
    ``parameter.cfg`` when NNI's local platform started the process, else ``{}``)."""

    def __init__(self) -> None:
        self._params: dict[str, Any] | None = None
        self._index = 0

    def parameters(self) -> dict[str, Any]:
        if self._params is None:
            self._params = _nni_parameter_file()
            if self._params is None:
                log.warning("running without an experiment: get_next_parameter() returns {}")
                self._params = {}
        return self._params

    def report(self, metric: Any, *, final: bool) -> None:
        number, _ = _value(metric, "final result" if final else "intermediate result")
        if math.isnan(number):
            raise ValueError("the result must not be NaN")
        if final:
            print(f"[nni] final result: {metric}", flush=True)
        else:
            print(f"[nni] intermediate result: {metric} (index {self._index})", flush=True)
            self._index += 1


def _nni_parameter_file() -> dict[str, Any] | None:
    sys_dir = os.environ.get("NNI_SYS_DIR")
    if not sys_dir:
        return None
    path = Path(sys_dir) / "parameter.cfg"
    if not path.is_file():
        return None
    raw = json.loads(path.read_text().splitlines()[0])
    params = raw.get("parameters", raw) if isinstance(raw, dict) else None
    return params if isinstance(params, dict) else None


class _AssayTrial:
    """A trial of an assay experiment: reports go to the master through ``assay.core``."""

    def __init__(self) -> None:
        import assay.core

        self._ctx = assay.core.init()
        atexit.register(self._ctx.close)
        info = self._ctx.info
        assert info is not None and info.trial is not None
        self._hparams = dict(info.trial.hparams)
        budget = trial_budget(info.trial.config, info.searcher.get("pending_length"))
        if budget is not None:
            self._hparams[TRIAL_BUDGET] = budget
        self._metric = info.searcher.get("metric") or DEFAULT
        self._code_driven = bool(info.searcher.get("code_driven", True))
        self._step = 0
        self._finished = False

    def parameters(self) -> dict[str, Any]:
        return self._hparams

    def report(self, metric: Any, *, final: bool) -> None:
        number, metrics = _value(metric, "final result" if final else "intermediate result")
        metrics.setdefault(self._metric, number)
        self._step += 1
        # The first final result is the trial's result, the one NNI ranks it by
        # (finalMetricData[0]); a later one is reported as a validation like any other.
        first_final = final and not self._finished
        self._ctx.train.report_validation_metrics(self._step, metrics, final=first_final)
        if final:
            self._finish(number)
        if self._ctx.preempt.should_preempt():
            self._leave()

    def _finish(self, number: float) -> None:
        if self._finished or self._code_driven:
            self._finished = True
            return
        self._finished = True
        # The searcher planned a length this code never sees: its one result completes the
        # operation the trial was started for.
        operations = self._ctx.searcher.operations()
        op = next(operations, None)
        if op is not None:
            op.report_completed(number)
        close = getattr(operations, "close", None)
        if close is not None:
            close()

    def _leave(self) -> None:
        log.info("the experiment asked this trial to stop; exiting")
        self._ctx.close()
        sys.exit(0)


def trial_budget(config: dict[str, Any], pending_length: int | None) -> int | None:
    """``TRIAL_BUDGET`` for a trial of a hyperband experiment (NNI's Hyperband and BOHB map to
    it): the length its searcher wants it trained to, as NNI's advisors pass the budget in
    the parameters; None for other searchers, whose trials NNI gives no budget."""
    searcher = config.get("searcher")
    if not isinstance(searcher, dict) or searcher.get("name") != "hyperband":
        return None
    if pending_length is not None:
        return pending_length
    # Started with nothing pending (the code decides how long): the most it may be given.
    longest = searcher.get("max_length", searcher.get("max_time"))
    if isinstance(longest, dict) and len(longest) == 1:
        longest = next(iter(longest.values()))
    return longest if isinstance(longest, int) and not isinstance(longest, bool) else None


_made: list[_Standalone | _AssayTrial] = []


def current() -> _Standalone | _AssayTrial:
    """The runtime of this process, made on first use."""
    if not _made:
        _made.append(_AssayTrial() if _in_assay_trial() else _Standalone())
    return _made[0]


def _in_assay_trial() -> bool:
    """Whether an assay agent started this process as a trial (not a job's task)."""
    if not os.environ.get("ASSAY_CLUSTER_INFO"):
        return False
    try:
        from assay.core import get_cluster_info
    except ImportError:
        return False
    info = get_cluster_info()
    return info is not None and info.trial is not None
