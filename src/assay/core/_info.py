"""What a trial process knows about itself: ``assay.get_cluster_info()``."""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class TrialInfo:
    trial_id: int
    experiment_id: int
    trial_seed: int
    hparams: dict[str, Any]
    config: dict[str, Any]
    steps_completed: int
    trial_run_id: int
    restarts: int = 0
    debug: bool = False


@dataclass(frozen=True)
class ClusterInfo:
    """The allocation this process runs in. ``latest_checkpoint`` is what to resume from."""

    master_url: str
    cluster_id: str
    agent_id: str
    slot_ids: list[str]
    task_id: str
    allocation_id: str
    session_token: str
    task_type: str
    latest_checkpoint: str | None
    container_addrs: list[str] = field(default_factory=list)
    container_rank: int = 0
    gpu_uuids: list[str] = field(default_factory=list)
    user_data: dict[str, Any] = field(default_factory=dict)
    trial: TrialInfo | None = None
    checkpoint_storage: dict[str, Any] | None = None
    searcher: dict[str, Any] = field(default_factory=dict)

    @property
    def _trial(self) -> TrialInfo:
        if self.trial is None:
            raise RuntimeError("this task is not a trial")
        return self.trial


@functools.cache
def get_cluster_info() -> ClusterInfo | None:
    """This process's cluster info, or None when it runs outside a cluster."""
    path = os.environ.get("ASSAY_CLUSTER_INFO")
    if not path:
        return None
    with open(path) as f:
        raw = json.load(f)
    return parse_cluster_info(raw, token=os.environ.get("ASSAY_TOKEN", ""))


def parse_cluster_info(raw: dict[str, Any], token: str = "") -> ClusterInfo:
    trial_raw = raw.get("trial")
    trial = None
    if isinstance(trial_raw, dict):
        trial = TrialInfo(
            trial_id=int(trial_raw["trial_id"]),
            experiment_id=int(trial_raw["experiment_id"]),
            trial_seed=int(trial_raw.get("trial_seed", 0)),
            hparams=dict(trial_raw.get("hparams") or {}),
            config=dict(trial_raw.get("config") or {}),
            steps_completed=int(trial_raw.get("steps_completed", 0)),
            trial_run_id=int(trial_raw.get("trial_run_id", 1)),
            restarts=int(trial_raw.get("restarts", 0)),
            debug=bool((trial_raw.get("config") or {}).get("debug", False)),
        )
    return ClusterInfo(
        master_url=str(raw.get("master_url", os.environ.get("ASSAY_MASTER", ""))),
        cluster_id=str(raw.get("cluster_id", "")),
        agent_id=str(raw.get("agent_id", "")),
        slot_ids=[str(s) for s in raw.get("slot_ids", [])],
        task_id=str(raw.get("task_id", "")),
        allocation_id=str(raw.get("allocation_id", "")),
        session_token=token,
        task_type=str(raw.get("task_type", "TRIAL")),
        latest_checkpoint=raw.get("latest_checkpoint"),
        container_addrs=list(raw.get("container_addrs", [])),
        container_rank=int(raw.get("container_rank", 0)),
        gpu_uuids=list(raw.get("gpu_uuids", [])),
        user_data=dict(raw.get("user_data") or {}),
        trial=trial,
        checkpoint_storage=raw.get("checkpoint_storage"),
        searcher=dict(raw.get("searcher") or {}),
    )
