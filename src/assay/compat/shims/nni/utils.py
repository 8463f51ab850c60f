"""``nni.utils``: helpers trial code uses with its parameters."""

from __future__ import annotations

from typing import Any, TypeVar

P = TypeVar("P")


def merge_parameter(base_params: P, override_params: dict[str, Any] | None) -> P:
    """Update ``base_params`` (a dict or an ``argparse.Namespace``) in place with the tuner's
    ``override_params`` and return it, as NNI does: every key must already be there, and a
    value must keep its type (an int may stand for a float). Raises ``ValueError`` otherwise."""
    if override_params is None:
        return base_params
    as_dict = isinstance(base_params, dict)
    for key, value in override_params.items():
        present = key in base_params if as_dict else hasattr(base_params, key)  # type: ignore[operator]
        if not present:
            raise ValueError(f"Key '{key}' not found in base parameters.")
        current = base_params[key] if as_dict else getattr(base_params, key)  # type: ignore[index]
        merged = _compatible(key, current, value)
        if as_dict:
            base_params[key] = merged  # type: ignore[index]
        else:
            setattr(base_params, key, merged)
    return base_params


def _compatible(key: str, current: Any, value: Any) -> Any:
    if current is None or value is None or isinstance(value, type(current)):
        return value
    if isinstance(current, float) and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    raise ValueError(
        f"Expected '{key}' in override parameters to have type {type(current).__name__}, "
        f"but found {type(value).__name__}"
    )
