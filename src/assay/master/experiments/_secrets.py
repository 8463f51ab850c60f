"""Masking the secret environment variable values of a trial's experiment in the lines its
processes write, before they are stored: what the logs API and ``assay trial logs`` read is
already masked, so no reader can forget to."""

from __future__ import annotations

import dataclasses
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import TypeVar

from assay.config import MASK, secret_pattern, secret_values
from assay.db import Session, experiments, trials
from assay.protocol import LogEntry


class LogMasker:
    """Masks log lines by trial. Each trial's pattern (one compiled regex of its experiment's
    secrets, shared by the experiment's trials) is read from the database once and kept, for
    the ``size`` trials seen last: an experiment's environment never changes. The size is
    well above the trials a large cluster runs at once (8,000 on 1,000 agents of 8 slots), so
    a running trial's lines never read its experiment again. Patterns are kept by experiment
    too: a new trial of an experiment already seen reads only which experiment it is of (a
    thousand agents start 80 trials a second, and each read of an experiment's row decodes its
    whole config: a tenth of the master's time at 1,000 agents, B13)."""

    def __init__(self, size: int = 65536, experiments_kept: int = 4096) -> None:
        self._size = size
        self._experiments_kept = experiments_kept
        self._patterns: OrderedDict[int, re.Pattern[str] | None] = OrderedDict()
        self._of_experiment: OrderedDict[int, re.Pattern[str] | None] = OrderedDict()
        # Log batches are stored on worker threads, several at a time.
        self._lock = threading.Lock()

    def masked(self, session: Session, entries: Sequence[LogEntry]) -> list[LogEntry]:
        """``entries`` with every secret of their trial's experiment masked."""
        patterns = self.patterns(session, {e.trial_id for e in entries})
        out: list[LogEntry] = []
        for entry in entries:
            pattern = patterns.get(entry.trial_id)
            line = entry.line if pattern is None else pattern.sub(MASK, entry.line)
            out.append(entry if line == entry.line else dataclasses.replace(entry, line=line))
        return out

    def patterns(
        self, session: Session, trial_ids: Iterable[int]
    ) -> dict[int, re.Pattern[str] | None]:
        """The pattern of each of ``trial_ids`` (None: no secrets, or no such trial), those not
        kept read at once: which experiment each is of in one query, the experiments not kept
        in another."""
        out: dict[int, re.Pattern[str] | None] = {}
        missing: list[int] = []
        with self._lock:
            for trial_id in trial_ids:
                if trial_id in self._patterns:
                    self._patterns.move_to_end(trial_id)
                    out[trial_id] = self._patterns[trial_id]
                else:
                    missing.append(trial_id)
        if not missing:
            return out
        # A trial not found gets no pattern and is not remembered: it may be created later.
        of = {t: e for t, (e, _) in trials.experiments_of(session, missing).items()}
        with self._lock:
            # Taken now: keeping the ones read below may push some of these out.
            known = {e: self._of_experiment[e] for e in of.values() if e in self._of_experiment}
        read = {
            exp.id: secret_pattern(secret_values(exp.config))
            for exp in experiments.by_ids(session, set(of.values()) - set(known)).values()
        }
        found = {**known, **read}
        with self._lock:
            for exp_id, pattern in found.items():
                _keep(self._of_experiment, exp_id, pattern, self._experiments_kept)
            for trial_id, exp_id in of.items():
                if exp_id in found:
                    _keep(self._patterns, trial_id, found[exp_id], self._size)
                    out[trial_id] = found[exp_id]
        return out


K = TypeVar("K")
V = TypeVar("V")


def _keep(kept: OrderedDict[K, V], key: K, value: V, size: int) -> None:
    kept[key] = value
    kept.move_to_end(key)
    while len(kept) > size:
        kept.popitem(last=False)
