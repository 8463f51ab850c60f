"""Submitting an experiment: validate everything first, then create it in one transaction."""

from __future__ import annotations

import random
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay import rest
from assay.config import (
    MAX_NAME,
    ExperimentConfig,
    InvalidConfig,
    MasterConfig,
    NotAnExperimentConfig,
    ResourcesConfig,
    load_experiment_config,
    masked_by_config,
    parse_yaml,
    resolve_checkpoint_storage,
)
from assay.context import ContextInfo, inspect_archive
from assay.db import Experiment, contexts, experiments, jobs
from assay.errors import ErrorDetail
from assay.master.experiments._entrypoint_files import missing_script_problem
from assay.master.experiments._lifecycle import apply_ops
from assay.master.kernel import StorageAccess, Tx, account_state_change, add_note, endpoint_limit
from assay.protocol import ExperimentState
from assay.storage import (
    LOCAL_STORAGE_TYPES,
    probe_config_storage,
    storage_endpoint,
    storage_from_config,
)

MAX_NOTES = 100
"""The most notes a submission may carry."""


@dataclass(frozen=True)
class Submission:
    """What a client sends to create an experiment."""

    config_text: str
    context: bytes
    overrides: tuple[str, ...] = ()
    activate: bool = True
    owner: str = ""
    """Who submits it: set by the master from the signed-in user, never by the client."""
    notes: tuple[str, ...] = ()
    """Lines for the experiment's log, stored with it (what a config reader decided: a tuner
    mapped onto a searcher, keys ignored)."""
    original_text: str = ""
    """The config as its author wrote it, when ``config_text`` is a translation of it (an NNI
    config read by a client or by :func:`read_submission`): what the experiment shows as its
    original config. Empty: ``config_text`` is the original."""
    source: rest.ConfigSource = rest.ConfigSource.ASSAY
    """How the config was written: set by the master when it reads an NNI config, and for a
    config it derives from an experiment's (a fork of an NNI experiment is one too)."""


TENSORBOARD_STORAGE_NOTE = (
    "tensorboard_storage is not used (Determined stopped using it too): each trial's "
    "TensorBoard files go to checkpoint_storage under tensorboard/<experiment>/<trial>/; "
    "`assay tensorboard start` shows them"
)


@dataclass(frozen=True)
class ValidSubmission:
    config: ExperimentConfig
    config_text: str
    context: ContextInfo
    context_data: bytes
    activate: bool
    owner: str
    notes: tuple[str, ...] = ()
    original_text: str = ""
    source: rest.ConfigSource = rest.ConfigSource.ASSAY


def validate_submission(
    sub: Submission, settings: MasterConfig, assay_home: Path
) -> ValidSubmission:
    """Check the config and the context; raise before anything is stored.

    Config problems (the schema, the semantic checks and an unknown resource pool) are reported
    together in one :class:`InvalidConfig`.
    """
    config, notes = check_config(sub, settings, assay_home)
    info = inspect_archive(sub.context)
    check_entrypoint_files(config, info)
    if config.reproducibility.experiment_seed is None:
        seed = random.SystemRandom().randrange(0, 2**31 - 1)
        config = config.model_copy(
            update={
                "reproducibility": config.reproducibility.model_copy(
                    update={"experiment_seed": seed}
                )
            }
        )
    return ValidSubmission(
        config,
        sub.config_text,
        info,
        sub.context,
        sub.activate,
        sub.owner,
        notes,
        sub.original_text,
        sub.source,
    )


def check_entrypoint_files(config: ExperimentConfig, context: ContextInfo) -> None:
    """Raise :class:`InvalidConfig` when the entrypoint runs a Python script the context
    does not hold: every trial would fail at once with "can't open file"."""
    problem = missing_script_problem(config.entrypoint, context.members)
    if problem is not None:
        raise InvalidConfig("invalid experiment config: 1 problem", [problem])


def check_config(
    sub: Submission, settings: MasterConfig, assay_home: Path
) -> tuple[ExperimentConfig, tuple[str, ...]]:
    """Every check of a submission but the context's: the config as it would run (its
    checkpoint storage resolved and probed) and the notes for its log. Raises
    :class:`InvalidConfig` with every problem of the config at once."""
    raw: Any = parse_yaml(sub.config_text, "<config>")
    problems: list[ErrorDetail] = [
        ErrorDetail(path, "must not contain NUL characters (\\0)") for path in _nul_paths(raw, "")
    ]
    problems += [
        ErrorDetail(f"{what}[{i}]", "must not contain NUL characters (\\0)")
        for what, items in (("overrides", sub.overrides), ("notes", sub.notes))
        for i, item in enumerate(items)
        if "\x00" in item
    ]
    if "\x00" in sub.original_text:
        problems.append(ErrorDetail("original_config", "must not contain NUL characters (\\0)"))
    if len(sub.notes) > MAX_NOTES:
        problems.append(
            ErrorDetail("notes", f"must have at most {MAX_NOTES} lines, got {len(sub.notes)}")
        )
    config: ExperimentConfig | None = None
    try:
        config = load_experiment_config(
            raw, overrides=sub.overrides, max_grid_points=settings.limits.max_grid_points
        )
    except NotAnExperimentConfig:
        raise  # one line on its own: the rest would be noise about a job file's keys
    except InvalidConfig as exc:
        problems.extend(exc.details)
    pool = _requested_pool(raw, sub.overrides, config)
    pools = [p.pool_name for p in settings.resource_pools]
    if pool and pool not in pools:
        problems.append(
            ErrorDetail(
                "resources.resource_pool",
                f"unknown resource pool {_quoted(pool)}; this cluster has: {', '.join(pools)}",
            )
        )
    elif config is not None:
        problems += _slot_problems(config.resources, settings)
    if problems or config is None:
        noun = "problem" if len(problems) == 1 else "problems"
        raise InvalidConfig(f"invalid experiment config: {len(problems)} {noun}", problems)
    storage = resolve_checkpoint_storage(
        config.checkpoint_storage, settings.checkpoint_storage, assay_home
    )
    config = config.model_copy(update={"checkpoint_storage": storage})
    beyond = StorageAccess.of(settings, assay_home).problems(storage)
    if beyond:
        noun = "problem" if len(beyond) == 1 else "problems"
        raise InvalidConfig(f"invalid experiment config: {len(beyond)} {noun}", beyond)
    if config.adaptdl is not None:
        _check_adaptdl_storage(config)
    notes = sub.notes + _check_storage(config, settings)
    if config.tensorboard_storage is not None:
        notes += (TENSORBOARD_STORAGE_NOTE,)
    return config, notes


def _check_adaptdl_storage(config: ExperimentConfig) -> None:
    """AdaptDL's directories live under the checkpoint storage: it must be a directory every
    agent reaches at the same path (shared_fs or directory)."""
    storage = config.checkpoint_storage
    kind = getattr(storage, "type", None)
    if kind not in LOCAL_STORAGE_TYPES:
        raise InvalidConfig(
            "invalid experiment config: 1 problem",
            [
                ErrorDetail(
                    "adaptdl",
                    "keeps its checkpoint, share and tensorboard directories in the checkpoint "
                    f"storage, which must then be of type {' or '.join(LOCAL_STORAGE_TYPES)}, "
                    f"not {kind}",
                )
            ],
        )


def _check_storage(config: ExperimentConfig, settings: MasterConfig) -> tuple[str, ...]:
    """The checkpoint storage can be built here, and an object store on a server the admin
    named takes a probe object (credentials, bucket, endpoint), so a bad one is refused now
    rather than at a trial's first checkpoint. A server the submitter chose is not contacted
    (:mod:`assay.master.kernel._storage_endpoints`): the note for the experiment's log says that its
    trials find its problems. Runs in a worker thread: a probe takes up to about a second."""
    storage = config.checkpoint_storage
    limit = endpoint_limit(settings)
    try:
        manager = storage_from_config(storage.to_json() if storage is not None else {}, limit=limit)
        if probe_config_storage(manager, allowed=limit):
            return ()
    except InvalidConfig as exc:
        noun = "problem" if len(exc.details) == 1 else "problems"
        raise InvalidConfig(
            f"invalid experiment config: {len(exc.details)} {noun}", exc.details
        ) from None
    endpoint = storage_endpoint(manager)
    if endpoint is None:
        return ()
    return (
        f"checkpoint_storage.{endpoint.key}: not checked at submission: the master contacts "
        "only the object stores its admin named (storage_endpoints in the master config), so "
        "a trial that cannot use it fails at its first checkpoint, saying why; the master "
        "neither reads nor deletes checkpoints there",
    )


def _nul_paths(value: Any, path: str) -> list[str]:
    """Where the config holds a NUL character: no database can store one in text, so it is
    refused with the other problems rather than failing when the experiment is written."""
    if isinstance(value, str):
        return [path or "<config>"] if "\x00" in value else []
    if isinstance(value, dict):
        found = [f"{path}.{k}".lstrip(".") for k in value if isinstance(k, str) and "\x00" in k]
        for key, item in value.items():
            found += _nul_paths(item, f"{path}.{key}".lstrip("."))
        return found
    if isinstance(value, list):
        return [p for i, item in enumerate(value) for p in _nul_paths(item, f"{path}[{i}]")]
    return []


def _slot_problems(resources: ResourcesConfig, settings: MasterConfig) -> list[ErrorDetail]:
    """A slot request the pool can never meet: over its ``max_slots``, or over what its
    provider can ever start. (A pool of static agents may grow as agents join, so only the
    absolute limit of the config bounds it.)"""
    pool = settings.pool(resources.resource_pool or settings.default_compute_pool)
    wanted = resources.slots_per_trial
    if pool is None or wanted == 0:
        return []
    where = "resources.slots_per_trial"
    name = _quoted(pool.pool_name)
    if pool.max_slots is not None and wanted > pool.max_slots:
        return [
            ErrorDetail(
                where,
                f"asks for {wanted} slots a trial, but resource pool {name} has at most "
                f"{pool.max_slots} (its max_slots)",
            )
        ]
    provider = pool.provider
    if provider is None:
        return []
    each = provider.slots_per_instance
    if resources.is_single_node and wanted > each:
        return [
            ErrorDetail(
                where,
                f"asks for {wanted} slots on a single node (is_single_node), but the instances "
                f"of resource pool {name} have {each} slots each (its provider's "
                "slots_per_instance)",
            )
        ]
    capacity = provider.max_instances * each
    if wanted > capacity:
        return [
            ErrorDetail(
                where,
                f"asks for {wanted} slots a trial, but resource pool {name} grows to at most "
                f"{capacity} slots ({provider.max_instances} instances of {each} slots: its "
                "provider's max_instances and slots_per_instance)",
            )
        ]
    return []


def _quoted(text: str, limit: int = 60) -> str:
    """``text`` quoted for a message, cut short when long (it may come from anyone)."""
    quoted = repr(text)
    return quoted if len(quoted) <= limit else f"{quoted[: limit - 4]}...{quoted[0]}"


def _requested_pool(raw: Any, overrides: tuple[str, ...], config: ExperimentConfig | None) -> str:
    if config is not None:
        return config.resources.resource_pool
    for item in overrides:
        if item.startswith("resources.resource_pool="):
            return item.split("=", 1)[1]
    if isinstance(raw, dict) and isinstance(raw.get("resources"), dict):
        pool = raw["resources"].get("resource_pool")
        return pool if isinstance(pool, str) else ""
    return ""


def create_experiment(tx: Tx, sub: ValidSubmission, settings: MasterConfig) -> Experiment:
    cfg = sub.config
    context = contexts.stored(
        tx.session,
        sha256=sub.context.sha256,
        size=sub.context.size,
        files=sub.context.files,
        data=sub.context_data,
        now=tx.now,
    )
    pool_name = cfg.resources.resource_pool or settings.default_compute_pool
    pool = next(p for p in settings.resource_pools if p.pool_name == pool_name)
    priority = cfg.resources.priority or pool.scheduler.default_priority
    job = jobs.create(
        tx.session,
        job_id=secrets.token_hex(4),
        type="EXPERIMENT",
        name="experiment",  # named below, once the experiment is
        pool=pool_name,
        priority=priority,
        weight=cfg.resources.weight,
        max_slots=cfg.resources.max_slots,
        submitted_at=tx.now,
        owner=sub.owner,
    )
    seed = cfg.reproducibility.experiment_seed
    assert seed is not None
    exp = experiments.create(
        tx.session,
        name=cfg.name or "experiment",
        description=cfg.description or "",
        state=ExperimentState.ACTIVE if sub.activate else ExperimentState.PAUSED,
        config=cfg.to_json(),
        original_config=sub.original_text or sub.config_text,
        context_id=context.id,
        job_id=job.id,
        seed=seed,
        owner=sub.owner,
        created_at=tx.now,
        source=sub.source.value,
    )
    if sub.activate:
        account_state_change(tx.session, exp, ExperimentState.ACTIVE, tx.now)
    for text in sub.notes:
        add_note(tx, exp.id, text)
    # The job queue shows the name as it is stored: with no secret value in it (a mask may be
    # longer than what it hides; the column keeps MAX_NAME characters).
    name = masked_by_config(exp.name, exp.config)
    jobs.set_name(
        tx.session, job, name=(f"{name} ({exp.id})" if cfg.name is None else name)[:MAX_NAME]
    )
    searcher = tx.searchers.build(exp, cfg, sub.context_data)
    tx.touched.add(exp.id)
    ops = searcher.initial_operations() if sub.activate else []
    apply_ops(tx, exp, ops)
    return exp
