"""What the tests of Determined's Trial APIs share: a config with overrides merged in, a trial
run to its end, and what the test contexts print (each rank's final weight, the hooks called)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from assay import rest
from tests.integration.cluster import Cluster


def merged(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """``base`` with ``overrides``: a dict overriding a dict is merged into it, one level."""
    out = dict(base)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = {**out[key], **value}
        else:
            out[key] = value
    return out


def run_trial(
    cluster: Cluster, submitted: dict[str, Any], context: Path, timeout: float = 240
) -> rest.Trial:
    """The one trial of ``submitted``, run to COMPLETED (its log's end in the failure)."""
    exp_id = cluster.submit(yaml.safe_dump(submitted), context)
    exp = cluster.wait_state(exp_id, "COMPLETED", "ERROR", "CANCELED", timeout=timeout)
    (trial,) = cluster.client.trials(exp_id)
    assert exp.state == "COMPLETED", "\n".join(cluster.trial_logs(int(trial.id))[-60:])
    return trial


def _texts(cluster: Cluster, trial_id: int) -> list[str]:
    """The trial's log lines, a launcher's ``[rank=N] `` prefix taken off."""
    return [
        line.split("] ", 1)[1] if line.startswith("[rank=") else line
        for line in cluster.trial_logs(trial_id)
    ]


def final_weights(cluster: Cluster, trial_id: int) -> dict[int, float]:
    """Each rank's last ``rank N final weight W`` line."""
    found: dict[int, float] = {}
    for text in _texts(cluster, trial_id):
        if text.startswith("rank ") and " final weight " in text:
            rank, value = text.split(" final weight ")
            found[int(rank.split()[1])] = float(value)
    return found


def hooks(cluster: Cluster, trial_id: int) -> list[list[str]]:
    """The callback hooks each run recorded (its ``hooks ...`` lines)."""
    return [text.split()[1:] for text in _texts(cluster, trial_id) if text.startswith("hooks ")]
