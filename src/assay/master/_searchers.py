"""Each live experiment's searcher and parsed config, kept in memory and rebuilt from the database.

The database holds the truth (the searcher snapshot, written with every event it handles); this
cache only saves re-parsing. After a failed transaction the affected entries are dropped, so the
next use restores them from the last committed snapshot.
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
from assay.db import Experiment, contexts
from assay.errors import ErrorDetail, InvalidConfig
from assay.master._custom_searcher import CustomSearchMethod
from assay.searcher import Searcher, SearchMethod, make_searcher


@dataclass
class _Entry:
    config: ExperimentConfig
    searcher: Searcher


class SearcherCache:
    """``work_dir`` holds the unpacked contexts custom searchers import their class from."""

    def __init__(self, work_dir: Path | None = None) -> None:
        self._entries: dict[int, _Entry] = {}
        self.work_dir = work_dir

    def config(self, exp: Experiment) -> ExperimentConfig:
        return self._entry(exp).config

    def searcher(self, exp: Experiment) -> Searcher:
        return self._entry(exp).searcher

    def build(self, exp: Experiment, config: ExperimentConfig, context: bytes) -> Searcher:
        """A new searcher for a new experiment (``exp.id`` assigned, context not yet stored)."""
        searcher = make_searcher(
            config, exp.seed, custom_method=self._custom(exp.id, config, context)
        )
        self._entries[exp.id] = _Entry(config, searcher)
        return searcher

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
            searcher = make_searcher(
                config, exp.seed, custom_method=self._custom(exp.id, config, context)
            )
            if exp.searcher_state is not None:
                searcher.restore(exp.searcher_state)
            entry = _Entry(config, searcher)
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


def _close(method: SearchMethod) -> None:
    close = getattr(method, "close", None)
    if callable(close):
        close()
    inner = getattr(method, "inner", None) or getattr(method, "method", None)
    if inner is not None and inner is not method:
        _close(inner)
