"""NNI config keys: matched as NNI matches them (case and underscores ignored), v1 names turned
into v2 ones, and the lists of keys accepted with a note or refused."""

from __future__ import annotations

from typing import Any


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
