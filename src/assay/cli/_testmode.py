"""``--test-mode``: the experiment config compressed to one short trial, and what it showed.

The rewrite is a pure function of the config so that what test mode changes can be read (and
tested) in one place: one trial of the ``single`` searcher (the first sample of the
hyperparameters), a few batches of training, no restarts, checkpoints in a throw-away directory.
"""

from __future__ import annotations

import copy
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Sequence

    from assay import rest
    from assay.config import ExperimentConfig

TEST_BATCHES = 5
"""How many batches (or unitless steps) a test-mode trial is asked to train: enough to run the
training loop, a validation and a checkpoint a few times over, little enough to be quick."""

TEST_EPOCHS = 1


@dataclass(frozen=True)
class Compressed:
    raw: dict[str, Any]
    """The config to submit."""
    notes: list[str]
    """What was changed that a user would not guess, one line each."""


def compress_length(length: Any, cfg: ExperimentConfig) -> tuple[Any, str | None]:
    """The searcher length a test-mode trial trains to (in the unit the code counts), and a note
    when the unit makes "a few batches" an approximation."""
    from assay.config import Unit

    unit, value = length.unit, length.value
    if unit is Unit.BATCHES:
        return {"batches": min(value, TEST_BATCHES)}, None
    if unit is Unit.UNITLESS:
        return min(value, TEST_BATCHES), None
    if unit is Unit.EPOCHS:
        return {"epochs": min(value, TEST_EPOCHS)}, (
            f"the searcher counts epochs: test mode trains {min(value, TEST_EPOCHS)} epoch, "
            "the shortest length it can ask for"
        )
    batch = _global_batch_size(cfg)
    records = min(value, TEST_BATCHES * batch)
    return {"records": records}, None


def _global_batch_size(cfg: ExperimentConfig) -> int:
    from assay.config import ConstHP

    hp = cfg.hyperparameters.get("global_batch_size")
    if isinstance(hp, ConstHP) and isinstance(hp.val, int) and hp.val > 0:
        return hp.val
    return 1


def compressed_config(raw: dict[str, Any], cfg: ExperimentConfig, checkpoints: str) -> Compressed:
    """``raw`` (a valid config, read as ``cfg``) rewritten for test mode; checkpoints go to the
    directory ``checkpoints``."""
    out = copy.deepcopy(raw)
    notes: list[str] = []
    plan = cfg.searcher.plan()
    searcher: dict[str, Any] = {
        "name": "single",
        "metric": cfg.searcher.metric,
        "smaller_is_better": cfg.searcher.smaller_is_better,
    }
    max_length = getattr(cfg.searcher, "max_length", None)
    if max_length is not None:
        searcher["max_length"], note = compress_length(max_length, cfg)
        if note:
            notes.append(note)
    elif plan.code_driven:
        notes.append(
            "the searcher lets the code choose how long to train: test mode cannot shorten it, "
            "the trial runs until its code returns"
        )
    if cfg.searcher.name != "single":
        notes.append(
            f"searcher {cfg.searcher.name} replaced by one trial of `single` (non-constant "
            "hyperparameters drawn once)"
        )
    out["searcher"] = searcher
    # The first failure is the answer: a restart would only print the same traceback again.
    out["max_restarts"] = 0
    # A throw-away run must not add to (or garbage-collect) the real checkpoint storage.
    out["checkpoint_storage"] = {"type": "shared_fs", "host_path": checkpoints}
    name = cfg.name or "experiment"
    out["name"] = f"{name} (test mode)"[:128]
    return Compressed(out, notes)


@dataclass(frozen=True)
class Verdict:
    ok: bool
    problems: list[str]
    warnings: list[str]


def judge(
    trial_state: str | None,
    completed: bool,
    metrics: Sequence[rest.Metric],
    checkpoints: int,
    metric_name: str,
) -> Verdict:
    """Whether the code passed test mode: its trial completed and reported the searcher's
    metric in a validation (without it a search cannot rank trials). No checkpoint is a
    warning: code may checkpoint only every so many batches."""
    problems: list[str] = []
    warnings: list[str] = []
    if trial_state is None:
        return Verdict(False, ["no trial was started"], [])
    if not completed:
        problems.append(f"the trial ended {trial_state}")
    validations = [m for m in metrics if m.group == "validation"]
    if completed and not any(metric_name in m.metrics for m in validations):
        problems.append(
            f"no validation reported the searcher's metric {metric_name!r}: a search could not "
            "rank its trials (report it with core.train.report_validation_metrics)"
        )
    if completed and checkpoints == 0:
        warnings.append(
            "no checkpoint was reported: the trial could not be paused, resumed or restarted"
        )
    return Verdict(not problems, problems, warnings)


def traceback_of(lines: Sequence[str]) -> list[str]:
    """The last Python traceback among the log ``lines`` (from ``Traceback`` to the exception
    line), or an empty list."""
    start = None
    for i, line in enumerate(lines):
        if line.startswith("Traceback (most recent call last)"):
            start = i
    if start is None:
        return []
    out = [lines[start]]
    for line in lines[start + 1 :]:
        out.append(line)
        if line and not line.startswith((" ", "\t")):
            break  # the exception line ends it
    return out


_FRAME = re.compile(r'^  File "(?P<path>[^"]+)", line (?P<rest>\d+.*)$')


def user_traceback(
    tb: Sequence[str], *, ran_in: re.Pattern[str], code_dir: Path, internal: Sequence[str]
) -> list[str]:
    """``tb`` (from :func:`traceback_of`) as the user reads it: the frames of files under
    ``internal`` (assay's own package, where the ``nni`` and ``determined`` shims are too)
    left out, and the paths of the trial's copy of the code (``ran_in`` matches where the
    agent put it) shown as the files of ``code_dir`` they came from.

    A traceback with no frame of the user's is kept whole: then the fault is assay's, and its
    frames are the ones that say where.
    """
    if not tb:
        return []
    frames: list[list[str]] = []
    head, tail = [tb[0]], [tb[-1]] if len(tb) > 1 else []
    for line in tb[1:-1]:
        if _FRAME.match(line) or not frames:
            frames.append([line])
        else:
            frames[-1].append(line)  # the frame's source line (and its ^^^ marks)
    out: list[str] = []
    hidden = 0
    ours = False
    for frame in frames:
        match = _FRAME.match(frame[0])
        if match is None:
            out += frame
            continue
        path = match.group("path")
        if any(path.startswith(d) for d in internal):
            hidden += 1
            continue
        if hidden:
            out.append(f"  ({_frames(hidden)} inside assay left out)")
            hidden = 0
        copied = ran_in.match(path)
        if copied:
            ours = True
            path = _shown(code_dir / path[copied.end() :])
        out.append(f'  File "{path}", line {match.group("rest")}')
        out += frame[1:]
    if not ours:
        return list(tb)
    if hidden:
        out.append(f"  ({_frames(hidden)} inside assay left out)")
    return head + out + tail


def _frames(n: int) -> str:
    return "1 frame" if n == 1 else f"{n} frames"


def _shown(path: Path) -> str:
    """A path of the user's as they would write it: relative to here when it is below here."""
    rel = os.path.relpath(path)
    return rel if not rel.startswith("..") else str(path)
