"""The experiment config: Determined's expconf, every top-level key, extended.

Keys assay acts on are typed strictly (``slurm`` among them: a Slurm pool's jobs take its
``sbatch_args`` and ``gpu_type``). Keys accepted only so that Determined configs load
unchanged (optimizations, integrations, data_layer, internal, pbs, log_policies,
tensorboard_storage) are loose sections.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field

from assay.config._base import ConfigModel, OpenSection, Problem, config_error, show
from assay.config._durations import AdaptDLConfig, Duration
from assay.config._environment import BindMount, EnvironmentConfig
from assay.config._hparams import HPName, Hyperparameter
from assay.config._length import Length, Unit
from assay.config._limits import (
    DB_INT_MAX,
    MAX_COMMAND,
    MAX_DESCRIPTION,
    MAX_LABELS,
    MAX_NAME,
    MAX_PATH,
    count,
)
from assay.config._resources import ResourcesConfig
from assay.config._searcher import SearcherConfig
from assay.config._storage import CheckpointStorageConfig

_NO_LENGTH = Length(unit=Unit.BATCHES, value=0)


def _entrypoint_input(value: Any) -> Any:
    # Checked here so that a wrong type gets one message rather than one per union member.
    if isinstance(value, str):
        if not value.strip():
            raise config_error("must not be empty: give a command such as python3 train.py")
        return _short_command(value, len(value))
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        if not value:
            raise config_error("must not be empty: give a command such as [python3, train.py]")
        return _short_command(value, sum(len(v) + 1 for v in value) - 1)
    raise config_error(
        f"must be a command string or a list of strings (its arguments), got {show(value)}"
    )


def _short_command(value: Any, length: int) -> Any:
    if length > MAX_COMMAND:
        raise config_error(
            f"must have at most {count(MAX_COMMAND)} characters in all, got {count(length)}"
        )
    return value


Entrypoint = Annotated[str | list[str], BeforeValidator(_entrypoint_input)]
Name = Annotated[str, Field(max_length=MAX_NAME)]
Count = Annotated[int, Field(ge=0, le=DB_INT_MAX)]
"""A count or a number of steps or seconds, kept within the database's integers."""


class ReproducibilityConfig(ConfigModel):
    """``experiment_seed`` seeds every trial's RNGs; None means the master draws one."""

    experiment_seed: Count | None = None


class ProfilingConfig(ConfigModel):
    """Determined's profiler settings (accepted; the harness records system metrics when
    ``enabled``)."""

    enabled: bool = False
    begin_on_batch: Count = 0
    end_after_batch: Count | None = None
    sync_timings: bool = True

    @classmethod
    def _cross_checks(cls, data: dict[str, Any]) -> list[Problem]:
        begin, end = data.get("begin_on_batch", 0), data.get("end_after_batch")
        if isinstance(begin, int) and isinstance(end, int) and end < begin:
            return [
                (
                    ("end_after_batch",),
                    f"must be >= begin_on_batch ({begin}), got {end}",
                )
            ]
        return []


class KerberosConfig(ConfigModel):
    config_file: Annotated[str, Field(max_length=MAX_PATH)]


class SlurmSection(ConfigModel):
    """Determined's ``slurm`` section: options for the jobs of a Slurm pool (``type: slurm``);
    on a pool of agents or of Kubernetes they do not apply."""

    sbatch_args: list[str] = []
    """Added to every job's ``sbatch`` options, after the pool's."""
    gpu_type: str | None = None
    """Asks for GPUs of this type: ``--gres=gpu:TYPE:N``."""
    slots_per_node: Annotated[int, Field(ge=1)] | None = None
    """Determined's least slots per node; refused on a Slurm pool, where the master places a
    trial's slots on nodes itself."""


class SecurityConfig(ConfigModel):
    """Determined's security section (accepted for compatibility)."""

    kerberos: KerberosConfig | None = None


class ExperimentConfig(ConfigModel):
    """One experiment: what to run, over which hyperparameters, searched how, on what.

    ``entrypoint`` is a shell command run from the context directory (``python3 train.py``) or a
    list of arguments, or Determined's legacy ``module:TrialClass``, trained by the harness
    (:mod:`assay.config.determined._legacy`).
    """

    name: Name | None = None
    description: Annotated[str, Field(max_length=MAX_DESCRIPTION)] | None = None
    labels: Annotated[list[Name], Field(max_length=MAX_LABELS)] = []
    project: Name = ""
    workspace: Name = ""
    debug: bool = False
    entrypoint: Entrypoint
    hyperparameters: dict[HPName, Hyperparameter] = {}
    searcher: SearcherConfig
    resources: ResourcesConfig = ResourcesConfig()
    checkpoint_storage: CheckpointStorageConfig | None = None
    max_restarts: Count = 5
    min_validation_period: Length = _NO_LENGTH
    min_checkpoint_period: Length = _NO_LENGTH
    records_per_epoch: Count = 0
    scheduling_unit: Annotated[int, Field(ge=1, le=DB_INT_MAX)] = 100
    perform_initial_validation: bool = False
    checkpoint_policy: Literal["best", "all", "none"] = "best"
    preemption_timeout: Count | None = None
    max_duration: Duration | None = None
    """The experiment's limit of active time (seconds; ``"1h"`` in the config): when it is
    spent the master stops the experiment as NNI's ``maxExperimentDuration`` does."""
    max_trial_duration: Duration | None = None
    """The longest a trial may run (seconds); a trial still running then is ended and marked."""
    adaptdl: AdaptDLConfig | None = None
    environment: EnvironmentConfig = EnvironmentConfig()
    bind_mounts: list[BindMount] = []
    data: dict[str, Any] = {}
    reproducibility: ReproducibilityConfig = ReproducibilityConfig()
    profiling: ProfilingConfig = ProfilingConfig()
    security: SecurityConfig | None = None
    slurm: SlurmSection | None = None
    # Accepted so Determined configs load unchanged; assay does not act on them.
    optimizations: OpenSection | None = None
    integrations: OpenSection | None = None
    data_layer: OpenSection | None = None
    internal: OpenSection | None = None
    pbs: OpenSection | None = None
    tensorboard_storage: OpenSection | None = None
    log_policies: list[dict[str, Any]] | None = None
