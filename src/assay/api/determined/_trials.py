"""Trials for Determined's clients: ``det trial describe|logs|kill``, ``det experiment
list-trials`` (and the trial part of ``det experiment describe``), and the SDK's ``Trial``
(reading it, its logs and its metrics; killing it).

Determined's streaming reads (a trial's logs, trials' metrics) answer as grpc-gateway streams
a gRPC stream: newline-delimited JSON, each line ``{"result": MESSAGE}``. Everything a request
could be refused for (an unknown trial, a bad filter) is checked before the first line, so a
refusal is an ordinary error answer, never a broken stream."""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from enum import StrEnum
from typing import Annotated, Any

from fastapi import Query
from fastapi.responses import StreamingResponse

from assay import rest
from assay.api._deps import ExperimentId, MasterDep, TrialId
from assay.api.determined._base import ActorDep, Limit, Offset, signed_router
from assay.errors import InvalidRequest
from assay.master import LOG_PAGE, Master, TrialsAsk
from assay.rest import determined as det

router = signed_router()


class _Group(StrEnum):
    """The groups of reports assay keeps."""

    TRAINING = "training"
    VALIDATION = "validation"


class _MetricTypeName(StrEnum):
    """``v1MetricType``: a group by Determined's older name (assay keeps no profiling)."""

    UNSPECIFIED = "METRIC_TYPE_UNSPECIFIED"
    TRAINING = "METRIC_TYPE_TRAINING"
    VALIDATION = "METRIC_TYPE_VALIDATION"


_METRIC_TYPES: dict[_MetricTypeName | None, _Group] = {
    _MetricTypeName.TRAINING: _Group.TRAINING,
    _MetricTypeName.VALIDATION: _Group.VALIDATION,
}

Texts = Annotated[list[Annotated[str, Query(max_length=256)]] | None, Query(max_length=1000)]

TrialIds = Annotated[list[Annotated[int, Query(ge=0, le=rest.INT_MAX)]], Query(alias="trialIds")]
"""The trials a metrics stream reads (``trialIds=1&trialIds=2``)."""

_STREAM = "application/json"
"""What grpc-gateway names a stream of messages, one JSON object a line."""


@router.get("/api/v1/trials/{trial_id}")
async def get_trial(trial_id: TrialId, master: MasterDep) -> det.GetTrialResponse:
    """``det trial describe``, the SDK's ``get_trial`` and ``Trial.reload``: the trial with
    summaries of all it reported and the count and size of its checkpoints."""
    trial = await master.reads.trial(trial_id)
    reports = await _reports(master, trial_id)
    checkpoints = (await master.reads.trial_checkpoints(trial_id)).checkpoints
    return det.GetTrialResponse(
        trial=det.det_trial(trial, reports=reports, checkpoints=checkpoints)
    )


@router.get("/api/v1/trials/{trial_id}/workloads")
async def get_trial_workloads(
    trial_id: TrialId,
    master: MasterDep,
    offset: Offset = 0,
    limit: Limit = 0,
    filter: det.WorkloadFilter = det.WorkloadFilter.UNSPECIFIED,
    order_by: Annotated[det.OrderBy, Query(alias="orderBy")] = det.OrderBy.UNSPECIFIED,
    sort_key: Annotated[str, Query(alias="sortKey", max_length=256)] = "",
    remove_deleted: Annotated[bool, Query(alias="removeDeletedCheckpoints")] = False,
    include_batch_metrics: Annotated[bool, Query(alias="includeBatchMetrics")] = False,
    metric_type: Annotated[_MetricTypeName | None, Query(alias="metricType")] = None,
    group: Annotated[_Group | None, Query()] = None,
) -> det.GetTrialWorkloadsResponse:
    """A page of the trial's workloads (``det trial describe``, ``det experiment describe``):
    its training and validation reports and its checkpoints, by step unless ``sortKey`` names
    a metric. assay keeps no per-batch metrics, so ``includeBatchMetrics`` adds none."""
    await master.reads.trial(trial_id)
    reports = await _reports(master, trial_id)
    checkpoints = (await master.reads.trial_checkpoints(trial_id)).checkpoints
    if remove_deleted:
        deleted = det.CheckpointState.DELETED
        checkpoints = [c for c in checkpoints if det.checkpoint_state(c.state) != deleted]
    only = group or _METRIC_TYPES.get(metric_type)
    shown = [w for w in det.workloads(reports, checkpoints) if _kept(w, filter, only)]
    if sort_key and sort_key != "batches":
        shown = _by_metric(shown, sort_key)
    if order_by == det.OrderBy.DESC:
        shown.reverse()
    page = det.paginate(len(shown), offset, limit)
    return det.GetTrialWorkloadsResponse(
        workloads=shown[page.start_index : page.end_index], pagination=page
    )


@router.get("/api/v1/experiments/{experiment_id}/trials")
async def get_experiment_trials(
    experiment_id: ExperimentId,
    master: MasterDep,
    offset: Offset = 0,
    limit: Limit = 0,
    sort_by: Annotated[det.TrialSortBy, Query(alias="sortBy")] = det.TrialSortBy.UNSPECIFIED,
    order_by: Annotated[det.OrderBy, Query(alias="orderBy")] = det.OrderBy.UNSPECIFIED,
    states: Annotated[list[det.DetExperimentState] | None, Query(max_length=32)] = None,
) -> det.GetExperimentTrialsResponse:
    """``det experiment list-trials``, ``det experiment describe`` and the SDK's
    ``Experiment.list_trials``: a page of the experiment's trials in any of ``states``,
    sorted by ``sortBy`` (ties by id), ascending unless ``orderBy`` says DESC."""
    listed = await master.reads.trials(TrialsAsk(experiment_id))
    held = (await master.reads.experiment_checkpoints(experiment_id)).checkpoints
    by_trial: dict[int, list[rest.Checkpoint]] = {t.id: [] for t in listed.trials}
    for ckpt in held:
        by_trial.setdefault(ckpt.trial_id, []).append(ckpt)
    metric = None
    if sort_by == det.TrialSortBy.LATEST_VALIDATION_METRIC:
        config = (await master.reads.experiment(experiment_id)).config
        metric = str((config.get("searcher") or {}).get("metric", ""))
    trials = [
        (t, det.det_trial(t, checkpoints=by_trial[t.id]))
        for t in listed.trials
        if _in_states(t, states or [])
    ]
    trials.sort(key=_trial_key(sort_by, metric))
    if order_by == det.OrderBy.DESC:
        trials.reverse()
    page = det.paginate(len(trials), offset, limit)
    return det.GetExperimentTrialsResponse(
        trials=[shown for _, shown in trials[page.start_index : page.end_index]],
        pagination=page,
    )


@router.post("/api/v1/trials/{trial_id}/kill")
async def kill_trial(trial_id: TrialId, master: MasterDep, actor: ActorDep) -> det.Empty:
    """``det trial kill`` and the SDK's ``Trial.kill``."""
    await master.experiments.kill_trial(actor, trial_id)
    return det.Empty()


@router.get("/api/v1/trials/{trial_id}/logs", response_model=det.TrialLog)
async def trial_logs(
    trial_id: TrialId,
    master: MasterDep,
    follow: bool = False,
    limit: Limit = 0,
    order_by: Annotated[det.OrderBy, Query(alias="orderBy")] = det.OrderBy.UNSPECIFIED,
    agent_ids: Annotated[Texts, Query(alias="agentIds")] = None,
    container_ids: Annotated[Texts, Query(alias="containerIds")] = None,
    rank_ids: Annotated[
        list[Annotated[int, Query(ge=0, le=rest.INT_MAX)]] | None,
        Query(alias="rankIds", max_length=1000),
    ] = None,
    stdtypes: Texts = None,
    sources: Texts = None,
    levels: Annotated[list[det.LogLevel] | None, Query(max_length=16)] = None,
    timestamp_before: Annotated[str | None, Query(alias="timestampBefore", max_length=64)] = None,
    timestamp_after: Annotated[str | None, Query(alias="timestampAfter", max_length=64)] = None,
    search_text: Annotated[str | None, Query(alias="searchText", max_length=1024)] = None,
    enable_regex: Annotated[bool, Query(alias="enableRegex")] = False,
) -> StreamingResponse:
    """``det trial logs`` (``--head``: ``limit``; ``--tail``: ``limit`` with ``orderBy``
    DESC, newest first; ``-f``: ``follow``, until the trial has ended) and the SDK's
    ``Trial.iter_logs``: the lines matching every filter given, streamed."""
    query = det.LogQuery(
        agent_ids=frozenset(agent_ids or ()),
        container_ids=frozenset(container_ids or ()),
        rank_ids=frozenset(rank_ids or ()),
        stdtypes=frozenset(stdtypes or ()),
        sources=frozenset(sources or ()),
        levels=frozenset(levels or ()),
        before=_time(timestamp_before, "timestampBefore"),
        after=_time(timestamp_after, "timestampAfter"),
        search=search_text or None,
        regex=det.search_pattern(search_text) if enable_regex and search_text else None,
    )
    trial = await master.reads.trial(trial_id)
    logs = _TrialLogs(master, trial, query)
    if follow:
        lines = logs.follow(limit)
    elif order_by == det.OrderBy.DESC:
        lines = logs.newest(limit)
    else:
        lines = logs.oldest(limit)
    return StreamingResponse(lines, media_type=_STREAM)


class _TrialLogs:
    """A trial's lines as Determined's, filtered, read a page at a time."""

    def __init__(self, master: Master, trial: rest.TrialDetail, query: det.LogQuery) -> None:
        self.master = master
        self.trial_id = trial.id
        self.query = query
        self.agents = _agents(trial)

    async def _shown(self, entries: Iterable[rest.LogEntry]) -> list[det.TrialLog]:
        entries = list(entries)
        if any(e.allocation_id not in self.agents for e in entries):
            # A run that started since the trial was read: learn where it runs.
            self.agents = _agents(await self.master.reads.trial(self.trial_id))
        shown = []
        for entry in entries:
            log = det.trial_log(entry, self.agents)
            if self.query.matches(log, entry.time):
                shown.append(log)
        return shown

    async def _pages(self) -> AsyncIterator[list[det.TrialLog]]:
        after = 0
        while True:
            page = (await self.master.reads.logs(self.trial_id, after, LOG_PAGE)).logs
            if not page:
                return
            after = page[-1].id
            yield await self._shown(page)

    async def oldest(self, limit: int) -> AsyncIterator[bytes]:
        left = limit or None
        async for page in self._pages():
            logs = page if left is None else page[:left]
            if left is not None:
                left -= len(logs)
            if logs:
                yield _lines(logs)
            if left == 0:
                return

    async def newest(self, limit: int) -> AsyncIterator[bytes]:
        kept: deque[det.TrialLog] = deque(maxlen=limit or None)
        async for logs in self._pages():
            kept.extend(logs)
        if kept:
            yield _lines(reversed(kept))

    async def follow(self, limit: int) -> AsyncIterator[bytes]:
        left = limit or None
        async for batch in await self.master.reads.follow_logs(self.trial_id, 0):
            logs = await self._shown(batch.entries)
            if left is not None:
                logs = logs[:left]
                left -= len(logs)
            if logs:
                yield _lines(logs)
            if batch.ended or left == 0:
                return


@router.get("/api/v1/trials/metrics/trial_metrics", response_model=det.GetMetricsResponse)
async def trial_metrics(
    master: MasterDep,
    group: Annotated[str, Query(min_length=1, max_length=64, pattern=rest.NO_NUL)],
    trial_ids: TrialIds = [],  # noqa: B006 (FastAPI copies a default)
) -> StreamingResponse:
    """The SDK's ``Trial.iter_metrics(group)``: the trials' reports of ``group`` (archived
    ones left out), trial by trial in id order, by step; all reported so far, then the end."""
    return await _metrics_stream(master, trial_ids, group)


@router.get("/api/v1/trials/metrics/training_metrics", response_model=det.GetMetricsResponse)
async def training_metrics(
    master: MasterDep,
    trial_ids: TrialIds = [],  # noqa: B006
) -> StreamingResponse:
    """The SDK's ``Trial.stream_training_metrics``."""
    return await _metrics_stream(master, trial_ids, _Group.TRAINING)


@router.get("/api/v1/trials/metrics/validation_metrics", response_model=det.GetMetricsResponse)
async def validation_metrics(
    master: MasterDep,
    trial_ids: TrialIds = [],  # noqa: B006
) -> StreamingResponse:
    """The SDK's ``Trial.stream_validation_metrics``."""
    return await _metrics_stream(master, trial_ids, _Group.VALIDATION)


async def _metrics_stream(master: Master, trial_ids: list[int], group: str) -> StreamingResponse:
    if not trial_ids:
        raise InvalidRequest("name at least one trial: trialIds=ID (repeat it for more)")
    twice = sorted({i for i in trial_ids if trial_ids.count(i) > 1})
    if twice:
        raise InvalidRequest(f"trialIds names trial {twice[0]} twice: name each trial once")
    reports: list[det.MetricsReport] = []
    for trial_id in sorted(trial_ids):
        shown = await _reports(master, trial_id, group)
        shown.sort(key=lambda m: (m.steps_completed, m.time))
        reports.extend(det.metrics_report(m, n) for n, m in enumerate(shown, 1))

    async def lines() -> AsyncIterator[bytes]:
        for start in range(0, len(reports), det.METRICS_BATCH):
            part = det.GetMetricsResponse(metrics=reports[start : start + det.METRICS_BATCH])
            yield _line(part)

    return StreamingResponse(lines(), media_type=_STREAM)


async def _reports(master: Master, trial_id: int, group: str | None = None) -> list[rest.Metric]:
    """The trial's reports (of ``group``, when given), archived ones left out."""
    body = await master.reads.metrics_json(trial_id, group)
    return list(rest.MetricList.model_validate_json(body).metrics)


def _line(message: det.DetResource) -> bytes:
    return b'{"result":' + message.model_dump_json().encode() + b"}\n"


def _lines(messages: Iterable[det.DetResource]) -> bytes:
    return b"".join(_line(m) for m in messages)


def _agents(trial: rest.TrialDetail) -> dict[str, str]:
    """The agent each of the trial's runs ran on (the first of several)."""
    return {a.id: min(a.slots) for a in trial.allocations if a.slots}


def _time(value: str | None, name: str) -> float | None:
    return None if value is None else det.parse_time(value, name)


def _kept(
    workload: det.WorkloadContainer, option: det.WorkloadFilter, group: _Group | None
) -> bool:
    if group == _Group.TRAINING and workload.training is None:
        return False
    if group == _Group.VALIDATION and workload.validation is None:
        return False
    match option:
        case det.WorkloadFilter.CHECKPOINT:
            return workload.checkpoint is not None
        case det.WorkloadFilter.VALIDATION:
            return workload.validation is not None
        case det.WorkloadFilter.CHECKPOINT_OR_VALIDATION:
            return workload.checkpoint is not None or workload.validation is not None
        case _:
            return True


def _by_metric(
    workloads: Sequence[det.WorkloadContainer], name: str
) -> list[det.WorkloadContainer]:
    """Workloads by the value of metric ``name`` (a number); those without it last."""

    def key(workload: det.WorkloadContainer) -> tuple[int, float]:
        shown = workload.training or workload.validation
        value = None if shown is None else shown.metrics.avg_metrics.get(name)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return (0, float(value))
        return (1, 0.0)

    return sorted(workloads, key=key)


def _in_states(trial: rest.Trial, states: Sequence[det.DetExperimentState]) -> bool:
    """Whether the trial is in one of ``states`` (all when none): Determined filters trials by
    its experiments' states, ACTIVE covering queued, pulling, starting and running."""
    if not states:
        return True
    shown = det.DetTrialState.of(trial.state)
    wanted = {s.value for s in states}
    return shown.value in wanted or (shown.active and det.DetExperimentState.ACTIVE in states)


def _trial_key(
    sort_by: det.TrialSortBy, metric: str | None
) -> Callable[[tuple[rest.Trial, det.Trial]], tuple[Any, ...]]:
    """How ``sortBy`` orders trials: by the field it names, then id; a trial lacking the field
    (no end yet, no validation yet) after those that have it."""
    by = det.TrialSortBy
    order = list(det.DetTrialState)

    def optional(value: float | None) -> tuple[int, float]:
        return (1, 0.0) if value is None else (0, value)

    def key(pair: tuple[rest.Trial, det.Trial]) -> tuple[Any, ...]:
        trial, shown = pair
        match sort_by:
            case by.START_TIME:
                field: tuple[Any, ...] = (trial.created_at,)
            case by.END_TIME:
                field = optional(trial.ended_at)
            case by.STATE:
                field = (order.index(shown.state),)
            case by.BEST_VALIDATION_METRIC:
                field = optional(trial.best_validation)
            case by.LATEST_VALIDATION_METRIC:
                latest = trial.latest_validation
                value = None if latest is None else latest.metrics.get(metric or "")
                number = isinstance(value, int | float) and not isinstance(value, bool)
                field = optional(float(value) if number and value is not None else None)
            case by.BATCHES_PROCESSED:
                field = (trial.steps_completed,)
            case by.DURATION:
                ended = trial.ended_at
                field = optional(None if ended is None else ended - trial.created_at)
            case by.RESTARTS:
                field = (trial.restarts,)
            case by.CHECKPOINT_SIZE:
                field = (int(shown.total_checkpoint_size or 0),)
            case _:
                field = ()
        return (*field, trial.id)

    return key
