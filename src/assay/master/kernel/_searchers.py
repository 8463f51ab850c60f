"""Each live experiment's searcher and parsed config, kept in memory and rebuilt from the database.

The database holds the truth: the searcher's last snapshot and the events it handled since
(``searcher_events``), appended in the transaction that acts on them. Restoring the snapshot and
replaying those events rebuilds the searcher exactly (search methods are pure). A snapshot costs
time and space in proportion to the search's history, an event a few hundred bytes, so the
master writes a new snapshot (and drops the events it includes) only after
:data:`SNAPSHOT_EVERY` events, or a :data:`SNAPSHOT_GROWTH`-th of the history when that is more:
the cost per event stays flat, and a restart replays at most that many. Custom searchers run
the user's code, whose replay is not known to be pure: they are snapshotted after every event,
as before. After a failed transaction the affected entries are
dropped, so the next use rebuilds them from what was committed.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from assay.config import (
    CustomConfig,
    ExperimentConfig,
    hyperparameters_to_json,
    load_experiment_config,
)
from assay.context import extract_archive
from assay.db import Experiment, Session, contexts, searcher_events
from assay.errors import ErrorDetail, InvalidConfig
from assay.master.kernel._custom_searcher import CustomSearchMethod
from assay.searcher import Searcher, SearchMethod, make_searcher

SNAPSHOT_EVERY = 100
"""Events between two snapshots of a searcher, at the least: a restart replays fewer than this
many (each as costly as when it first happened), and a snapshot's cost is shared by this many
events."""

SNAPSHOT_GROWTH = 10
"""A long search's snapshot is due only after a tenth as many events as it already holds: a
snapshot costs in proportion to the history, so spacing them in proportion keeps the cost per
event flat, while a restart replays at most a tenth of the history."""


@dataclass
class _Entry:
    config: ExperimentConfig
    searcher: Searcher
    replayable: bool
    context_sha256: str | None = None
    """The digest of the experiment's context (which never changes), once read."""


class SearcherCache:
    """``work_dir`` holds the unpacked contexts custom searchers import their class from."""

    def __init__(self, work_dir: Path | None = None) -> None:
        self._entries: dict[int, _Entry] = {}
        self.work_dir = work_dir

    def config(self, exp: Experiment) -> ExperimentConfig:
        return self._entry(exp).config

    def searcher(self, exp: Experiment) -> Searcher:
        return self._entry(exp).searcher

    def loaded_config(self, experiment_id: int) -> ExperimentConfig | None:
        """The experiment's config if its searcher is loaded, read without its row (None: not
        loaded; :meth:`config` of its row loads it)."""
        entry = self._entries.get(experiment_id)
        return None if entry is None else entry.config

    def loaded_passive(self, experiment_id: int) -> ExperimentConfig | None:
        """The experiment's config if its searcher is loaded and learns nothing from
        validations (not code-driven), read without building anything: so a validation of it
        can be stored outside the master's lock. None otherwise (it takes the lock)."""
        entry = self._entries.get(experiment_id)
        if entry is None or entry.searcher.code_driven:
            return None
        return entry.config

    def context_sha256(self, session: Session, exp: Experiment) -> str:
        """The digest of the experiment's context, read once per entry: each of its trials'
        starts names it to the agents."""
        entry = self._entry(exp)
        if entry.context_sha256 is None:
            entry.context_sha256 = contexts.require(session, exp.context_id).sha256
        return entry.context_sha256

    def build(self, exp: Experiment, config: ExperimentConfig, context: bytes) -> Searcher:
        """A new searcher for a new experiment (``exp.id`` assigned, context not yet stored)."""
        custom = self._custom(exp.id, config, context)
        searcher = make_searcher(config, exp.seed, custom_method=custom)
        searcher.keeps_events = True
        self._entries[exp.id] = _Entry(config, searcher, replayable=custom is None)
        return searcher

    def save(self, session: Session, exp: Experiment, *, final: bool = False) -> None:
        """Write what the experiment's searcher handled since the last save: its events, or a
        new snapshot when one is due (the first; every :data:`SNAPSHOT_EVERY` events, or a
        :data:`SNAPSHOT_GROWTH`-th of those it holds when that is more; every event of a
        custom searcher; and ``final``: the experiment ended)."""
        entry = self._entry(exp)
        events = entry.searcher.take_events()
        due = (
            final
            or not entry.replayable
            or searcher_events.pending(exp) + len(events) >= _snapshot_interval(exp)
            # None yet (or one holding no event): read off the row, not asked of the database
            # on every event.
            or exp.searcher_snapshot_seq == 0
        )
        if due:
            searcher_events.compact(session, exp, entry.searcher.snapshot(), handled=len(events))
        else:
            searcher_events.append(session, exp, events)

    def drop(self, exp_id: int) -> None:
        entry = self._entries.pop(exp_id, None)
        if entry is not None:
            _close(entry.searcher.method)

    def release(self, exp_id: int) -> None:
        """The experiment ended: stop any searcher subprocess and forget its context."""
        self.drop(exp_id)
        if self.work_dir is not None:
            shutil.rmtree(self.work_dir / str(exp_id), ignore_errors=True)

    def _entry(self, exp: Experiment) -> _Entry:
        entry = self._entries.get(exp.id)
        if entry is None:
            # Stored: a config accepted once keeps loading (its trials meet the agent's own
            # refusal of a Trial-class entrypoint) rather than break the master's loops.
            config = load_experiment_config(exp.config, stored=True)
            context = b""
            if isinstance(config.searcher, CustomConfig):
                context = contexts.archive_of(exp)
            custom = self._custom(exp.id, config, context)
            searcher = make_searcher(config, exp.seed, custom_method=custom)
            stored = searcher_events.snapshot(exp)
            if stored is not None:
                searcher.restore(stored)
            if searcher_events.pending(exp) > 0:
                searcher.replay(searcher_events.after_snapshot(exp))
            searcher.keeps_events = True
            entry = _Entry(config, searcher, replayable=custom is None)
            self._entries[exp.id] = entry
        return entry

    def _custom(self, exp_id: int, config: ExperimentConfig, context: bytes) -> SearchMethod | None:
        sc = config.searcher
        if not isinstance(sc, CustomConfig):
            return None
        if not sc.class_:
            raise InvalidConfig(
                "invalid experiment config: 1 problem",
                [
                    ErrorDetail(
                        "searcher.class",
                        "required for the custom searcher: the class in the context directory, "
                        "e.g. my_searcher:MySearcher",
                    )
                ],
            )
        if self.work_dir is None:
            raise InvalidConfig("custom searchers need a master with a working directory")
        code = self.work_dir / str(exp_id)
        if not code.exists():
            extract_archive(context, code)
        return CustomSearchMethod(
            sc.class_,
            code,
            seed=config.reproducibility.experiment_seed or 0,
            hyperparameters=hyperparameters_to_json(dict(config.hyperparameters)),
            smaller_is_better=sc.smaller_is_better,
            class_args=sc.class_args,
            settings=sc.model_dump(mode="json", by_alias=True, exclude_none=True),
        )


def _snapshot_interval(exp: Experiment) -> int:
    return max(SNAPSHOT_EVERY, exp.searcher_snapshot_seq // SNAPSHOT_GROWTH)


def _close(method: SearchMethod) -> None:
    close = getattr(method, "close", None)
    if callable(close):
        close()
    inner = getattr(method, "inner", None) or getattr(method, "method", None)
    if inner is not None and inner is not method:
        _close(inner)
