"""The NNI keys behind each key of the assay config an NNI config was read into.

An NNI config is read into an assay experiment config, which the usual loader then validates.
Its problems are found at assay's paths (``searcher.max_trials``), keys the user never wrote:
:class:`NniPaths` records, while the config is read, which NNI key (as the user spelled it: NNI
matches keys ignoring case and underscores, so ``max_trial_number`` stays ``max_trial_number``)
each assay key came from, and rewrites the loader's problems to name them.
"""

from __future__ import annotations

import re
from typing import Any

from assay.config.nni._keys import norm
from assay.errors import ErrorDetail

_HP_FIELDS = frozenset(
    ("minval", "maxval", "count", "q", "base", "mu", "sigma", "vals", "val", "options")
)
"""The fields of an assay hyperparameter, all drawn from NNI's ``_value`` list."""
_OPTION = re.compile(r"options(\[\d+\])(.*)")
_MESSAGES = {
    "grid search is in use but count was not provided": "GridSearch cannot enumerate a "
    "continuous range: use quniform, qloguniform, randint or choice, or another tuner",
}
"""Loader messages that name assay's own keys, in NNI's terms."""


def written_key(section: Any, key: str, spelling: str) -> str:
    """``key`` (compared form) as the user wrote it in ``section``, else NNI's ``spelling``."""
    if isinstance(section, dict):
        for k in section:
            if norm(str(k)) == key:
                return str(k)
    return spelling


def class_arg(section: Any, where: str, key: str, spelling: str) -> str:
    """The path of ``classArgs.<key>`` of the tuner or assessor ``section`` written at
    ``where``, in the user's spelling."""
    args_key = written_key(section, "classargs", "classArgs")
    args = None
    if isinstance(section, dict):
        args = next((v for k, v in section.items() if norm(str(k)) == "classargs"), None)
    return f"{where}.{args_key}.{written_key(args, key, spelling)}"


class NniPaths:
    """Assay config paths (prefixes) and the NNI paths they were read from."""

    def __init__(self) -> None:
        self._paths: dict[str, tuple[str, bool]] = {}
        self._space: str | None = None

    def add(self, ours: str, theirs: str, *, leaf: bool = False) -> None:
        """Problems at ``ours`` (or under it) are reported at ``theirs``; with ``leaf``, those
        under it too, at ``theirs`` itself: below a leaf of NNI's config (a classArgs value
        that became a section of assay's), assay's sub-keys mean nothing to the user."""
        self._paths[ours] = (theirs, leaf)

    def space(self, theirs: str) -> None:
        """The search space was written at ``theirs`` (``searchSpace``, or the file)."""
        self._space = theirs

    def user_path(self, path: str) -> str:
        """The NNI path behind the assay path ``path`` (``path`` itself if none is known)."""
        if self._space is not None and (
            path == "hyperparameters" or path.startswith("hyperparameters.")
        ):
            return _space_path(path.removeprefix("hyperparameters").lstrip("."), self._space)
        best = ""
        for ours in self._paths:
            if len(ours) > len(best) and (
                path == ours or path.startswith((f"{ours}.", f"{ours}["))
            ):
                best = ours
        if not best:
            return path
        theirs, leaf = self._paths[best]
        return theirs if leaf else theirs + path[len(best) :]

    def detail(self, detail: ErrorDetail) -> ErrorDetail:
        """``detail`` with its path (and a message naming assay's keys) in NNI's terms."""
        return ErrorDetail(
            self.user_path(detail.path), _MESSAGES.get(detail.message, detail.message)
        )


def _space_path(rest: str, base: str) -> str:
    # hyperparameters.<name>[.options[i].<name>]*.<field> -> searchSpace.<name>._value[i]...;
    # every field of an assay hyperparameter comes from NNI's _value, its type from _type.
    out = base
    expect_name = True
    for token in rest.split(".") if rest else []:
        if expect_name:
            out += f".{token}"
            expect_name = False
            continue
        option = _OPTION.fullmatch(token)
        if option:
            out += f"._value{option.group(1)}"
            if option.group(2):
                return out  # a constant option's own index: the option is the place
            expect_name = True
        elif token in _HP_FIELDS:
            return out + "._value"
        elif token == "type":
            return out + "._type"
        else:
            out += f".{token}"  # a nested map's key: another name
    return out
