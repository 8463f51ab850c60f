"""Reducing metrics: ``Reducer`` for validation metrics, ``MetricReducer`` and
``wrap_reducer`` for metrics that must be computed over every rank's data at once."""

from __future__ import annotations

import abc
import enum
import itertools
from collections.abc import Callable
from typing import Any

import torch


class Reducer(enum.Enum):
    """How ``evaluate_batch``'s per-batch metrics become one value: their mean (weighted by
    each rank's batches across ranks), sum, max or min."""

    AVG = 1
    SUM = 2
    MAX = 3
    MIN = 4


def plain(value: Any) -> Any:
    """A metric as JSON can carry it: tensors and numpy values become numbers or lists."""
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu()
        return value.item() if value.numel() == 1 else value.tolist()
    if hasattr(value, "tolist") and hasattr(value, "dtype"):
        return value.tolist()
    if hasattr(value, "item") and hasattr(value, "dtype"):
        return value.item()
    return value


def reduce_values(reducer: Reducer, values: list[Any], weights: list[int] | None = None) -> Any:
    """``values`` (numbers, or equally shaped arrays) reduced by ``reducer``."""
    stacked = torch.stack([torch.as_tensor(plain(v), dtype=torch.float64) for v in values])
    if reducer is Reducer.AVG:
        if weights is None:
            result = stacked.mean(dim=0)
        else:
            w = torch.as_tensor(weights, dtype=torch.float64)
            shape = (-1,) + (1,) * (stacked.dim() - 1)
            result = (stacked * w.reshape(shape)).sum(dim=0) / w.sum()
    elif reducer is Reducer.SUM:
        result = stacked.sum(dim=0)
    elif reducer is Reducer.MAX:
        result = stacked.max(dim=0).values
    elif reducer is Reducer.MIN:
        result = stacked.min(dim=0).values
    else:
        raise TypeError(f"not a det.pytorch.Reducer: {reducer!r}")
    return plain(result)


def mean_or_none(values: list[Any]) -> float | None:
    """The mean of a training metric's per-batch values (of every element, for arrays),
    leaving out Nones; None where they are not numbers (the name is kept, unaveraged)."""
    numbers = [plain(v) for v in values if v is not None]
    if not numbers:
        return None
    try:
        return float(torch.as_tensor(numbers, dtype=torch.float64).mean().item())
    except (TypeError, ValueError, RuntimeError):
        return None


class MetricReducer(metaclass=abc.ABCMeta):
    """A metric computed from every rank's updates: ``update`` it (a method of your own) during
    ``train_batch`` or ``evaluate_batch``; at the end ``per_slot_reduce`` runs on each rank and
    ``cross_slot_reduce`` on the chief with every rank's result."""

    @abc.abstractmethod
    def reset(self) -> None:
        """Start over (before each stretch of training and each validation)."""

    @abc.abstractmethod
    def per_slot_reduce(self) -> Any:
        """This rank's part (it travels to the chief, so keep it small)."""

    @abc.abstractmethod
    def cross_slot_reduce(self, per_slot_metrics: list[Any]) -> Any:
        """The metric from every rank's :meth:`per_slot_reduce`, in rank order."""


class _SimpleReducer(MetricReducer):
    """A function over every value ``update`` was given, in the order of the global batches."""

    def __init__(self, fn: Callable[[list[Any]], Any]) -> None:
        self.fn = fn
        self.values: list[Any] = []

    def reset(self) -> None:
        self.values = []

    def update(self, value: Any) -> None:
        self.values.append(value)

    def per_slot_reduce(self) -> Any:
        return self.values

    def cross_slot_reduce(self, per_slot_metrics: list[Any]) -> Any:
        # Batches were dealt to ranks in turn: interleave to get their global order back.
        gap = object()
        flat = [v for row in itertools.zip_longest(*per_slot_metrics, fillvalue=gap) for v in row]
        return self.fn([v for v in flat if v is not gap])


class _Wrapped:
    def __init__(self, reducer: MetricReducer, name: str | None, train: bool, val: bool) -> None:
        self.reducer = reducer
        self.name = name
        self.for_training = train
        self.for_validation = val

    def describe(self) -> str:
        return f"reducer {type(self.reducer).__name__} (name={self.name!r})"


class ReducerContext:
    """The part of the trial context that keeps the wrapped reducers."""

    def __init__(self, allgather: Callable[[Any], list[Any]]) -> None:
        self._wrapped_reducers: list[_Wrapped] = []
        self._allgather = allgather

    def wrap_reducer(
        self,
        reducer: Callable[[list[Any]], Any] | MetricReducer,
        name: str | None = None,
        for_training: bool = True,
        for_validation: bool = True,
    ) -> Any:
        """Register a reducer (a :class:`MetricReducer`, or a function of every value given to
        the returned object's ``update``). With ``name`` its result is that metric; without, it
        must return a dict of metrics."""
        if not isinstance(reducer, MetricReducer):
            if not callable(reducer):
                raise TypeError(
                    f"wrap_reducer() takes a det.pytorch.MetricReducer or a function, got "
                    f"{type(reducer).__name__}"
                )
            reducer = _SimpleReducer(reducer)
        self._wrapped_reducers.append(_Wrapped(reducer, name, for_training, for_validation))
        return reducer

    def reset_reducers(self) -> None:
        for wrapped in self._wrapped_reducers:
            wrapped.reducer.reset()

    def reduce_metrics(self, for_training: bool) -> dict[str, Any]:
        """Every reducer of this kind of workload, across the ranks (a collective)."""
        chosen = [
            w
            for w in self._wrapped_reducers
            if (w.for_training if for_training else w.for_validation)
        ]
        if not chosen:
            return {}
        gathered = self._allgather([w.reducer.per_slot_reduce() for w in chosen])
        metrics: dict[str, Any] = {}
        for wrapped, per_slot in zip(chosen, zip(*gathered, strict=True), strict=True):
            reduced = wrapped.reducer.cross_slot_reduce(list(per_slot))
            if wrapped.name is None:
                if not isinstance(reduced, dict):
                    raise TypeError(
                        f"{wrapped.describe()} was wrapped without a name, so it must return a "
                        f"dict of metrics; it returned a {type(reduced).__name__} (pass name= to "
                        "wrap_reducer for a single metric)"
                    )
                metrics.update({str(k): plain(v) for k, v in reduced.items()})
            else:
                if isinstance(reduced, dict):
                    raise TypeError(
                        f"{wrapped.describe()} has a name, so it must return one metric; it "
                        "returned a dict (leave name=None to return several)"
                    )
                metrics[wrapped.name] = plain(reduced)
        return metrics


def average_across_ranks(gathered: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Per batch, each metric's mean over the ranks that reported it."""
    ranks = [batches for batches in gathered if batches]
    out: list[dict[str, Any]] = []
    for i in range(len(ranks[0]) if ranks else 0):
        names = list(dict.fromkeys(k for batches in ranks for k in batches[i]))
        out.append(
            {name: mean_or_none([batches[i].get(name) for batches in ranks]) for name in names}
        )
    return out
