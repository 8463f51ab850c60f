"""NNI config keys: matched as NNI matches them (case and underscores ignored), v1 names turned
into v2 ones, and the lists of keys accepted with a note or refused."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any

from assay.errors import ErrorDetail


def norm(key: str) -> str:
    """The form NNI compares keys in: ``trial_command`` == ``trialCommand`` == ``TrialCommand``."""
    return key.replace("_", "").lower()


def normalized(data: dict[str, Any]) -> dict[str, tuple[str, Any]]:
    """Keys in their compared form, each with the key as written (for messages) and its value."""
    return {norm(str(k)): (str(k), v) for k, v in data.items()}


V2_KEYS = frozenset(
    norm(k)
    for k in (
        "trialCommand",
        "trialCodeDirectory",
        "searchSpaceFile",
        "searchSpace",
        "trainingService",
        "maxExperimentDuration",
        "maxTrialNumber",
        "trialGpuNumber",
        "experimentWorkingDirectory",
    )
)
V1_KEYS = frozenset(
    norm(k)
    for k in (
        "trainingServicePlatform",
        "searchSpacePath",
        "maxExecDuration",
        "maxTrialNum",
        "authorName",
        "multiPhase",
        "multiThread",
    )
)

V1_TO_V2 = {
    "maxexecduration": "maxexperimentduration",
    "maxtrialnum": "maxtrialnumber",
    "searchspacepath": "searchspacefile",
    "trainingserviceplatform": "trainingservice",
}
"""v1 top-level names with a v2 name (the ``trial`` block is mapped on its own)."""

V1_TRIAL = {"command": "trialcommand", "codedir": "trialcodedirectory", "gpunum": "trialgpunumber"}

RECORDED = frozenset(
    norm(k)
    for k in (
        "experimentName",
        "authorName",
        "description",
        "logLevel",
        "debug",
        "experimentWorkingDirectory",
        "logDir",
        "logCollection",
        "versionCheck",
        "multiThread",
        "experimentType",
    )
)
"""Keys about NNI's own manager process, logs and UI: accepted, nothing on assay to act on."""

OTHER_PLATFORM = frozenset(
    norm(k)
    for k in (
        "nniManagerIp",
        "tunerGpuIndices",
        "sharedStorage",
        "machineList",
        "remoteConfig",
        "paiConfig",
        "paiYarnConfig",
        "kubeflowConfig",
        "frameworkcontrollerConfig",
        "amlConfig",
        "dlcConfig",
        "hybridConfig",
        "localConfig",
        "nniManagerNfsMountPath",
        "containerNfsMountPath",
        "reuseMode",
    )
)
"""Keys that only mean something on NNI's other training services (or its own manager's
machine): accepted, named in one note."""

OTHER_PLATFORMS = frozenset(
    ("remote", "openpai", "pai", "kubeflow", "frameworkcontroller", "aml", "dlc", "hybrid")
)

REFUSED_IF_TRUE = {
    norm("multiPhase"): "multi-phase trials are not supported: give each set of hyperparameters "
    "its own trial (multiPhase: false)",
    norm("useAnnotation"): "NNI annotations are not supported: call nni.get_next_parameter() "
    "and nni.report_final_result() in the trial code (useAnnotation: false)",
}
"""Keys accepted when false, refused when true, with what to do instead."""


TOP_LEVEL = (
    # v2
    "experimentName",
    "searchSpaceFile",
    "searchSpace",
    "trialCommand",
    "trialCodeDirectory",
    "trialConcurrency",
    "trialGpuNumber",
    "maxExperimentDuration",
    "maxTrialDuration",
    "maxTrialNumber",
    "nniManagerIp",
    "useAnnotation",
    "debug",
    "logLevel",
    "experimentWorkingDirectory",
    "tunerGpuIndices",
    "tuner",
    "assessor",
    "advisor",
    "trainingService",
    "sharedStorage",
    # v1
    "authorName",
    "maxExecDuration",
    "maxTrialNum",
    "trainingServicePlatform",
    "searchSpacePath",
    "multiPhase",
    "multiThread",
    "versionCheck",
    "logDir",
    "logCollection",
    "trial",
    "localConfig",
    "machineList",
)
"""NNI's top-level keys as its documentation spells them (for suggesting one for a typo)."""

V1_TRIAL_KEYS = (
    "command",
    "codeDir",
    "gpuNum",
    "cpuNum",
    "memoryMB",
    "memorySize",
    "image",
    "imagePullSecrets",
    "virtualCluster",
    "shmMB",
    "nasMode",
    "portList",
    "authFile",
    "paiConfigPath",
    "paiStorageConfigName",
    "worker",
    "ps",
    "master",
    "taskRoles",
    "adaptive",
    "checkpoint",
    "nfs",
)
"""The keys of v1's ``trial`` block, on every training service (nnictl's schema)."""

ALGORITHM_KEYS = (
    "name",
    "className",
    "codeDirectory",
    "classArgs",
    # v1
    "builtinTunerName",
    "builtinAssessorName",
    "builtinAdvisorName",
    "codeDir",
    "classFileName",
    "gpuNum",
    "gpuIndices",
    "includeIntermediateResults",
)
"""The keys of a ``tuner``, ``assessor`` or ``advisor`` section (v2 and v1)."""


def did_you_mean(key: str, names: Sequence[str]) -> str | None:
    """The name in ``names`` closest to ``key`` (compared as NNI compares keys), if any is
    close enough to be the key meant."""
    by_norm = {norm(n): n for n in names}
    close = difflib.get_close_matches(norm(key), list(by_norm), n=1, cutoff=0.75)
    return by_norm[close[0]] if close else None


def unknown_keys(section: dict[str, Any], where: str, names: Sequence[str]) -> list[ErrorDetail]:
    """A problem for each key of ``section`` (written at ``where``) not in ``names``, with the
    name meant when one is close, else every valid name."""
    known = {norm(n) for n in names}
    out: list[ErrorDetail] = []
    for key in section:
        if norm(str(key)) in known:
            continue
        close = did_you_mean(str(key), names)
        message = (
            f"unknown key (did you mean {close}?)"
            if close
            else f"unknown key; valid keys are: {', '.join(names)}"
        )
        out.append(ErrorDetail(f"{where}.{key}" if where else str(key), message))
    return out
