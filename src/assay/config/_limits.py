"""The limits every experiment config must keep, and the checks of its raw values against them.

A config is read from people and programs that may be careless or hostile. Each limit keeps one
thing from failing later, where no message can say why: a value the database cannot store, a
structure the validators cannot walk, a search whose trials the master cannot hold. Each message
that refuses one names the limit, so a person knows what would be accepted.
"""

from __future__ import annotations

import math
import re
from typing import Any

from assay.errors import ErrorDetail

MAX_CONFIG_BYTES = 8 * 2**20
"""The most bytes a config's text may have (as UTF-8), checked before it is parsed. What a
client submits may be larger than the file its user wrote (an NNI config goes with its search
space file inline, as indented JSON); :data:`MAX_NODES` bounds the work of reading it."""
MAX_NODES = 100_000
"""The most values (maps, lists and scalars) a config may hold, each alias counted as the values
it repeats: far above any real config, far below what a YAML alias bomb expands to."""
MAX_DEPTH = 64
"""The deepest nesting of maps and lists, so that no validator runs out of stack."""

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
DB_INT_MAX = 2**31 - 1
"""The largest integer every supported database keeps in an integer column (PostgreSQL's
``integer`` is 32 bits): counts, lengths, seeds and ids that are stored, or compared with stored
step counts, stay within it."""
SEED_MAX = 2**32 - 1
"""The largest seed numpy (and so Optuna's samplers) accepts."""

MAX_TRIALS = 1_000_000
"""The most trials one experiment may plan (``max_trials``, a grid's points)."""
MAX_TRIALS_AT_ONCE = 1_000
"""The most trials a searcher may start at once (``max_concurrent_trials``, a PBT population):
each is a row written in the transaction that creates the experiment."""
DEFAULT_MAX_GRID_POINTS = 100_000
"""The master's default for ``limits.max_grid_points``."""
MAX_RUNGS = 32
"""The most rungs a halving searcher may plan."""
MAX_DIVISOR = 1000.0
"""The largest ``divisor`` of a halving searcher (rung lengths shrink by it at each rung)."""
MAX_SLOTS_PER_TRIAL = 2**16
"""The most slots one trial may ask for, whatever the cluster."""

MAX_NAME = 256
"""Names: the experiment's (the database keeps 256 characters), hyperparameters', metrics',
labels', pools'."""
MAX_DESCRIPTION = 8192
MAX_LABELS = 100
MAX_HYPERPARAMETERS = 10_000
MAX_COMMAND = 32_768
"""The longest ``entrypoint``, all arguments together."""
MAX_PATH = 4096
"""Linux's PATH_MAX: a longer path cannot be opened."""
MAX_UUID = 64
"""A checkpoint's id (the database keeps 64 characters)."""


TOO_DEEP = f"nested too deep: at most {MAX_DEPTH} levels of maps and lists"
"""The message of :func:`value_problems` for a structure too deep to validate."""


_SURROGATE = re.compile("[\ud800-\udfff]")


def count(n: int) -> str:
    """``1000000`` -> ``"1,000,000"``: limits and sizes in messages."""
    return f"{n:,}"


def value_problems(raw: Any) -> list[ErrorDetail]:
    """Every value of ``raw`` (as parsed) that no config may hold, wherever it is: nesting deeper
    than :data:`MAX_DEPTH`, integers outside 64 bits, NaN and infinities, and values JSON cannot
    carry (YAML's ``!!binary``, ``!!set``, ``!!timestamp``...).

    The walk is iterative, so it is safe on any input; below a structure that is too deep it does
    not look further.
    """
    problems: list[ErrorDetail] = []
    stack: list[tuple[Any, str, int]] = [(raw, "", 1)]
    while stack:
        value, path, depth = stack.pop()
        if isinstance(value, dict | list) and depth > MAX_DEPTH:
            problems.append(ErrorDetail(path, TOO_DEEP))
            continue
        if isinstance(value, dict):
            children = []
            for key, item in value.items():
                where = f"{path}.{key}" if path else str(key)
                problem = _scalar_problem(key, "a key")
                if problem is not None:
                    problems.append(ErrorDetail(where, problem))
                children.append((item, where, depth + 1))
            stack.extend(reversed(children))
        elif isinstance(value, list):
            items = [(item, f"{path}[{i}]", depth + 1) for i, item in enumerate(value)]
            stack.extend(reversed(items))
        else:
            problem = _scalar_problem(value, "a value")
            if problem is not None:
                problems.append(ErrorDetail(path, problem))
    return problems


def _scalar_problem(value: Any, what: str) -> str | None:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, str):
        lone = _SURROGATE.search(value)
        if lone is None:
            return None
        return (
            f"must be valid Unicode text: holds the lone surrogate \\u{ord(lone.group()):04x}, "
            "which cannot be stored"
        )
    if isinstance(value, int):
        if INT64_MIN <= value <= INT64_MAX:
            return None
        return (
            f"must fit in 64 bits ({count(INT64_MIN)} to {count(INT64_MAX)}), "
            f"got an integer of {value.bit_length()} bits"
        )
    if isinstance(value, float):
        return None if math.isfinite(value) else f"must be a finite number, got {value}"
    return (
        f"must be a map, a list, a string, a number, true, false or null; got {what} of "
        f"YAML type {type(value).__name__} (tags such as !!binary, !!set or !!timestamp are "
        "not accepted)"
    )
