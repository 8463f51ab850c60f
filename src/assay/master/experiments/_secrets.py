"""Masking the secret environment variable values of a trial's experiment in the lines its
processes write, before they are stored: what the logs API and ``assay trial logs`` read is
already masked, so no reader can forget to."""

from __future__ import annotations

import dataclasses
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence

from assay.config import MASK, secret_pattern, secret_values
from assay.db import Session, experiments, trials
from assay.protocol import LogEntry


class LogMasker:
    """Masks log lines by trial. Each trial's pattern (one compiled regex of its experiment's
    secrets, shared by the experiment's trials) is read from the database once and kept, for
    the ``size`` trials seen last: an experiment's environment never changes. The size is
    well above the trials a large cluster runs at once (8,000 on 1,000 agents of 8 slots), so
    a running trial's lines never read its experiment again."""

    def __init__(self, size: int = 65536) -> None:
        self._size = size
        self._patterns: OrderedDict[int, re.Pattern[str] | None] = OrderedDict()
        # Log batches are stored on worker threads, several at a time.
        self._lock = threading.Lock()

    def masked(self, session: Session, entries: Sequence[LogEntry]) -> list[LogEntry]:
        """``entries`` with every secret of their trial's experiment masked."""
        out: list[LogEntry] = []
        # Looked up once per trial, not per line: a large cluster ships thousands of lines a
        # second, in batches of one trial's.
        patterns: dict[int, re.Pattern[str] | None] = {}
        for entry in entries:
            if entry.trial_id in patterns:
                pattern = patterns[entry.trial_id]
            else:
                pattern = patterns[entry.trial_id] = self._pattern(session, entry.trial_id)
            line = entry.line if pattern is None else pattern.sub(MASK, entry.line)
            out.append(entry if line == entry.line else dataclasses.replace(entry, line=line))
        return out

    def _pattern(self, session: Session, trial_id: int) -> re.Pattern[str] | None:
        with self._lock:
            if trial_id in self._patterns:
                self._patterns.move_to_end(trial_id)
                return self._patterns[trial_id]
        trial = trials.get(session, trial_id)
        exp = experiments.get(session, trial.experiment_id) if trial is not None else None
        if exp is None:
            return None  # no trial, no secrets; not remembered, in case it is created later
        pattern = secret_pattern(secret_values(exp.config))
        with self._lock:
            self._patterns[trial_id] = pattern
            while len(self._patterns) > self._size:
                self._patterns.popitem(last=False)
        return pattern
