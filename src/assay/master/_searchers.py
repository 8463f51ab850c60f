"""Each live experiment's searcher and parsed config, kept in memory and rebuilt from the database.

The database holds the truth (the searcher snapshot, written with every event it handles); this
cache only saves re-parsing. After a failed transaction the affected entries are dropped, so the
next use restores them from the last committed snapshot.
"""

from __future__ import annotations

from dataclasses import dataclass

from assay.config import ExperimentConfig, load_experiment_config
from assay.db import Experiment
from assay.master._basic_factory import make_searcher
from assay.searcher import Searcher


@dataclass
class _Entry:
    config: ExperimentConfig
    searcher: Searcher


class SearcherCache:
    def __init__(self) -> None:
        self._entries: dict[int, _Entry] = {}

    def config(self, exp: Experiment) -> ExperimentConfig:
        return self._entry(exp).config

    def searcher(self, exp: Experiment) -> Searcher:
        return self._entry(exp).searcher

    def put(self, exp_id: int, config: ExperimentConfig, searcher: Searcher) -> None:
        self._entries[exp_id] = _Entry(config, searcher)

    def drop(self, exp_id: int) -> None:
        self._entries.pop(exp_id, None)

    def _entry(self, exp: Experiment) -> _Entry:
        entry = self._entries.get(exp.id)
        if entry is None:
            config = load_experiment_config(exp.config)
            searcher = make_searcher(config, exp.seed)
            if exp.searcher_state is not None:
                searcher.restore(exp.searcher_state)
            entry = _Entry(config, searcher)
            self._entries[exp.id] = entry
        return entry
