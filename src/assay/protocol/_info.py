"""Cluster-info: what a trial process knows about the allocation it runs in.

The master builds it into each start message, the agent writes it to the file
``$ASSAY_CLUSTER_INFO`` names (adding the master's URL as the agent reaches it), and the harness
reads it back with :func:`assay.get_cluster_info`. The defaults here are the ones a missing
field takes on every side.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypedDict, cast

from assay.protocol._fields import Fields

TASK_TYPE_TRIAL = "TRIAL"


class TrialEnv:
    """The environment variables a trial process is started with, besides the user's own."""

    MASTER = "ASSAY_MASTER"
    """The master's URL as the agent reaches it."""
    CLUSTER_INFO = "ASSAY_CLUSTER_INFO"
    """The path of the cluster-info JSON file."""
    TOKEN = "ASSAY_TOKEN"
    """The allocation's token: the harness's credential, and the distributed ranks' secret."""
    TRIAL_ID = "ASSAY_TRIAL_ID"
    EXPERIMENT_ID = "ASSAY_EXPERIMENT_ID"
    ALLOCATION_ID = "ASSAY_ALLOCATION_ID"
    TRIAL_SEED = "ASSAY_TRIAL_SEED"
    AGENT_ID = "ASSAY_AGENT_ID"
    RENDEZVOUS_PORT = "ASSAY_RENDEZVOUS_PORT"
    """Where the chief of a distributed trial listens for the other ranks."""
    TENSORBOARD_DIR = "ASSAY_TENSORBOARD_DIR"
    """The run's TensorBoard log directory on its agent (``ctx.train.get_tensorboard_path()``),
    copied to checkpoint storage as its files appear."""
    RANK_LAYOUT = "ASSAY_RANK_LAYOUT"
    """This node's share of a distributed allocation (its ``RankLayout`` as JSON), which the
    launchers (``assay.launch``) start the node's ranks from."""


class DetEnv:
    """Determined's own variables, which a trial gets so that Determined's clients in it
    (``from determined.experimental import client``, the ``det`` command) reach the master
    as the experiment's owner, as they do in a Determined task."""

    PREFIX = "/det"
    """Where the master serves Determined's API: ``DET_MASTER`` is its address plus this."""
    MASTER = "DET_MASTER"
    USER = "DET_USER"
    """The experiment's owner."""
    USER_TOKEN = "DET_USER_TOKEN"
    """The allocation's token, which Determined's API under :data:`PREFIX` takes as the
    owner's while the allocation lives (assay's own API never does)."""


class PaiEnv:
    """The variables of OpenPAI's that say where a task instance's own processes are, which
    the step in a Kubernetes pod sets to the pod's own address (what the node's would be
    elsewhere): JupyterLab, sshd and TensorBoard listen on it."""

    CONTAINER_HOST_IP = "PAI_CONTAINER_HOST_IP"
    CURRENT_CONTAINER_IP = "PAI_CURRENT_CONTAINER_IP"


class NniEnv:
    """NNI's trial environment variables, set for every trial (NNI's trial code reads them)."""

    PLATFORM = "NNI_PLATFORM"
    """``local``, or ``adl`` for an experiment with an ``adaptdl`` section."""
    EXPERIMENT_ID = "NNI_EXP_ID"
    TRIAL_JOB_ID = "NNI_TRIAL_JOB_ID"
    """The trial's id (assay's trial id, as a string)."""
    SYS_DIR = "NNI_SYS_DIR"
    """The trial's working directory on its agent."""
    OUTPUT_DIR = "NNI_OUTPUT_DIR"
    """A directory of the trial's for its outputs (under ``NNI_SYS_DIR``)."""
    TRIAL_SEQ_ID = "NNI_TRIAL_SEQ_ID"
    """The trial's place among its experiment's trials, from 0."""
    LOCAL_PLATFORM = "local"
    ADAPTDL_PLATFORM = "adl"


class AdaptDLEnv:
    """The directories an experiment with an ``adaptdl`` section gives each trial. The agent
    makes each one before the trial starts."""

    CHECKPOINT_PATH = "ADAPTDL_CHECKPOINT_PATH"
    """The trial's own: kept across its restarts."""
    SHARE_PATH = "ADAPTDL_SHARE_PATH"
    """The experiment's: shared by all of its trials."""
    TENSORBOARD_LOGDIR = "ADAPTDL_TENSORBOARD_LOGDIR"
    """The run's TensorBoard directory, ``TrialEnv.TENSORBOARD_DIR``: set by the agent; its files
    are copied to the checkpoint storage's ``tensorboard/<experiment>/<trial>/`` and kept after
    the experiment ends."""
    PATHS = (CHECKPOINT_PATH, SHARE_PATH, TENSORBOARD_LOGDIR)


class SearcherInfo(TypedDict, total=False):
    """What the trial's searcher is (``ClusterInfo.searcher``)."""

    metric: str | None
    smaller_is_better: bool
    code_driven: bool
    """The trial's own code decides how long to train; the searcher hands out no lengths."""
    pending_length: int | None
    """The length the searcher wants the trial trained to when it started, if any."""


@dataclass(frozen=True)
class TrialInfo:
    trial_id: int
    experiment_id: int
    trial_seed: int
    hparams: dict[str, Any]
    config: dict[str, Any]
    steps_completed: int
    """Where training resumes: the steps of the checkpoint the run starts from."""
    trial_run_id: int
    """The run of the trial this process belongs to, from 1 (a restart is a new run)."""
    restarts: int = 0
    debug: bool = False
    """The experiment config's ``debug``; not sent, read from ``config``."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "trial_id": self.trial_id,
            "experiment_id": self.experiment_id,
            "trial_seed": self.trial_seed,
            "hparams": self.hparams,
            "steps_completed": self.steps_completed,
            "trial_run_id": self.trial_run_id,
            "restarts": self.restarts,
            "config": self.config,
        }

    @classmethod
    def from_dict(cls, raw: object, where: str = "cluster_info.trial") -> TrialInfo:
        f = Fields(raw, where)
        config = f.mapping("config", {})
        return cls(
            trial_id=f.integer("trial_id"),
            experiment_id=f.integer("experiment_id"),
            trial_seed=f.integer("trial_seed", 0),
            hparams=f.mapping("hparams", {}),
            config=config,
            steps_completed=f.integer("steps_completed", 0),
            trial_run_id=f.integer("trial_run_id", 1),
            restarts=f.integer("restarts", 0),
            debug=bool(config.get("debug", False)),
        )


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
    """The allocation's token; it travels in ``ASSAY_TOKEN``, never in the file."""
    task_type: str
    latest_checkpoint: str | None
    container_addrs: list[str] = field(default_factory=list)
    container_rank: int = 0
    gpu_uuids: list[str] = field(default_factory=list)
    user_data: dict[str, Any] = field(default_factory=dict)
    trial: TrialInfo | None = None
    checkpoint_storage: dict[str, Any] | None = None
    searcher: SearcherInfo = field(default_factory=SearcherInfo)

    def to_dict(self) -> dict[str, Any]:
        return {
            "master_url": self.master_url,
            "cluster_id": self.cluster_id,
            "agent_id": self.agent_id,
            "slot_ids": list(self.slot_ids),
            "task_id": self.task_id,
            "allocation_id": self.allocation_id,
            "task_type": self.task_type,
            "latest_checkpoint": self.latest_checkpoint,
            "container_addrs": list(self.container_addrs),
            "container_rank": self.container_rank,
            "gpu_uuids": list(self.gpu_uuids),
            "user_data": self.user_data,
            "trial": None if self.trial is None else self.trial.to_dict(),
            "checkpoint_storage": self.checkpoint_storage,
            "searcher": dict(self.searcher),
        }

    @classmethod
    def from_dict(
        cls, raw: object, *, token: str = "", master_url: str = "", where: str = "cluster_info"
    ) -> ClusterInfo:
        """``token`` is the allocation's (from the environment); ``master_url`` is used when
        the file names none."""
        f = Fields(raw, where)
        trial = f.raw.get("trial")
        return cls(
            master_url=f.text("master_url", master_url),
            cluster_id=f.text("cluster_id", ""),
            agent_id=f.text("agent_id", ""),
            slot_ids=f.texts("slot_ids"),
            task_id=f.text("task_id", ""),
            allocation_id=f.text("allocation_id", ""),
            session_token=token,
            task_type=f.text("task_type", TASK_TYPE_TRIAL),
            latest_checkpoint=f.text("latest_checkpoint", None),
            container_addrs=f.texts("container_addrs"),
            container_rank=f.integer("container_rank", 0),
            gpu_uuids=f.texts("gpu_uuids"),
            user_data=f.mapping("user_data", {}),
            trial=TrialInfo.from_dict(trial, f.path("trial")) if isinstance(trial, dict) else None,
            checkpoint_storage=f.mapping("checkpoint_storage", None),
            searcher=cast(SearcherInfo, f.mapping("searcher", {})),
        )
