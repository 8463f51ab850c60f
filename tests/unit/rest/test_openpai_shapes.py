"""OpenPAI's REST v2 job shapes: what an OpenPAI rest-server answered reads into the models and
writes back unchanged, so scripts written against OpenPAI read assay's answers.

The payloads follow what microsoft/pai's rest-server produced: ``convertFrameworkSummary`` and
``convertFrameworkDetail`` of ``src/rest-server/src/models/v2/job/k8s.js`` (k8s launcher), the
js-sdk's recorded answers of a yarn-era rest-server (``contrib/js-sdk/tests/common/test_data``),
the examples of ``src/rest-server/docs/swagger.yaml``, the v2 job controller's 202 answers and
the express error handler's ``{code, message}``. Values are made up; shapes are theirs.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from assay import rest

K8S_SUMMARY: dict[str, Any] = {
    "debugId": "6f1c0de2b7b44d52b1f8d1c8c6a0a001",
    "name": "ps-worker-digits",
    "username": "alice",
    "state": "RUNNING",
    "subState": "AttemptRunning",
    "executionType": "START",
    "retries": 1,
    "retryDetails": {"user": 1, "platform": 0, "resource": 0},
    "retryDelayTime": None,
    "createdTime": 1700000000123,
    "completedTime": None,
    "appExitCode": None,
    "virtualCluster": "default",
    "totalGpuNumber": 2,
    "totalTaskNumber": 3,
    "totalTaskRoleNumber": 2,
}

YARN_SUMMARY: dict[str, Any] = {
    "appExitCode": 0,
    "completedTime": 1700000300000,
    "createdTime": 1700000000000,
    "executionType": "STOP",
    "name": "hello-world",
    "retries": 0,
    "retryDetails": {"platform": 0, "resource": 0, "user": 0},
    "state": "SUCCEEDED",
    "subState": "FRAMEWORK_COMPLETED",
    "totalGpuNumber": 0,
    "totalTaskNumber": 1,
    "totalTaskRoleNumber": 1,
    "username": "bob",
    "virtualCluster": "default",
}

K8S_DETAIL: dict[str, Any] = {
    "debugId": "6f1c0de2b7b44d52b1f8d1c8c6a0a001",
    "name": "ps-worker-digits",
    "jobStatus": {
        "username": "alice",
        "state": "FAILED",
        "subState": "Completed",
        "executionType": "START",
        "retries": 0,
        "retryDetails": {"user": 0, "platform": 0, "resource": 0},
        "retryDelayTime": None,
        "createdTime": 1700000000123,
        "completedTime": 1700000060456,
        "appId": "0b7e8d36-5d1f-4c1e-9a38-3c1b0e6f2a11",
        "appProgress": 1,
        "appTrackingUrl": "",
        "appLaunchedTime": 1700000000123,
        "appCompletedTime": 1700000060456,
        "appExitCode": 1,
        "appExitSpec": {
            "code": 1,
            "phrase": "UserFailure",
            "issuer": "USER_CONTAINER",
            "causer": "USER_CONTAINER",
            "type": "USER_FAILURE",
            "stage": "RUNNING",
            "behavior": "PERMANENT",
            "reaction": "NEVER_RETRY",
            "reason": "User program exited with a non-zero code",
            "repro": ["exit 1 from the command"],
            "solution": ["read the instance's log"],
        },
        "appExitDiagnostics": "Pod failed",
        "appExitMessages": {
            "container": None,
            "runtime": {"exitCode": 1, "originUserExitCode": 1, "name": "app"},
            "launcher": None,
        },
        "appExitTriggerMessage": "MinFailedTaskCount 1 has reached",
        "appExitTriggerTaskRoleName": "worker",
        "appExitTriggerTaskIndex": 1,
        "appExitType": "Failed",
        "virtualCluster": "default",
    },
    "taskRoles": {
        "ps": {
            "taskRoleStatus": {"name": "ps"},
            "taskStatuses": [
                {
                    "taskIndex": 0,
                    "taskState": "STOPPED",
                    "containerId": "pod-uid-ps-0",
                    "containerIp": "10.0.0.4",
                    "containerPorts": {"ps": 23001, "ssh": 23002, "http": 23003},
                    "containerGpus": None,
                    "containerLog": "http://10.0.0.4:9103/log-manager/tail/alice/ps-worker-digits/ps/pod-uid-ps-0/",
                    "containerExitCode": -210,
                }
            ],
        },
        "worker": {
            "taskRoleStatus": {"name": "worker"},
            "taskStatuses": [
                {
                    "taskIndex": 0,
                    "taskState": "SUCCEEDED",
                    "containerId": "pod-uid-worker-0",
                    "containerIp": "10.0.0.5",
                    "containerPorts": {"ssh": 24001, "http": 24002},
                    "containerGpus": 1,
                    "containerLog": "http://10.0.0.5:9103/log-manager/tail/alice/ps-worker-digits/worker/pod-uid-worker-0/",
                    "containerExitCode": 0,
                },
                {
                    "taskIndex": 1,
                    "taskState": "FAILED",
                    "containerId": "pod-uid-worker-1",
                    "containerIp": "10.0.0.6",
                    "containerPorts": {"ssh": 24003, "http": 24004},
                    "containerGpus": 3,
                    "containerLog": "http://10.0.0.6:9103/log-manager/tail/alice/ps-worker-digits/worker/pod-uid-worker-1/",
                    "containerExitCode": 1,
                },
            ],
        },
    },
}

YARN_DETAIL: dict[str, Any] = {
    "name": "serving-mnist",
    "jobStatus": {
        "username": "core",
        "state": "RUNNING",
        "subState": "APPLICATION_RUNNING",
        "executionType": "START",
        "retries": 1,
        "retryDetails": {"user": 0, "platform": 1, "resource": 0},
        "createdTime": 1700000000000,
        "completedTime": None,
        "appId": "application_1700000000000_0002",
        "appProgress": 0,
        "appTrackingUrl": "http://10.1.0.2/yarn/10.1.0.2:8088/proxy/application_1700000000000_0002/",
        "appLaunchedTime": 1700000070000,
        "appCompletedTime": None,
        "appExitCode": None,
        "appExitSpec": None,
        "appExitDiagnostics": None,
        "appExitMessages": {"container": None, "runtime": None, "launcher": None},
        "appExitTriggerMessage": None,
        "appExitTriggerTaskRoleName": None,
        "appExitTriggerTaskIndex": None,
        "appExitType": None,
        "virtualCluster": "default",
    },
    "taskRoles": {
        "worker": {
            "taskRoleStatus": {"name": "worker"},
            "taskStatuses": [
                {
                    "taskIndex": 0,
                    "taskState": "RUNNING",
                    "containerId": "container_e34_1700000000000_0002_01_000002",
                    "containerIp": "10.1.0.7",
                    "containerPorts": {"ssh": "34235", "http": "34236", "model_server": "34237"},
                    "containerGpus": 8,
                    "containerLog": "http://10.1.0.2/yarn/10.1.0.7:8042/node/containerlogs/c2/core/",
                    "containerExitCode": None,
                }
            ],
        }
    },
}

SWAGGER_DETAIL: dict[str, Any] = {
    "name": "job name",
    "jobStatus": {
        "username": "user name",
        "state": "SUCCEEDED",
        "subState": "Completed",
        "executionType": "STOP",
        "retries": 0,
        "createdTime": 0,
        "completedTime": 0,
        "appId": "id",
        "appLaunchedTime": 0,
        "appCompletedTime": 0,
        "appExitCode": 0,
        "virtualCluster": "unknown",
    },
    "taskRoles": {
        "taskrole": {
            "taskRoleStatus": {"name": "task role name"},
            "taskStatuses": [{"taskIndex": 0, "taskState": "SUCCEEDED"}],
        }
    },
}


def round_trip(model: Any, payload: Any) -> Any:
    """What a model writes back (as JSON would carry it) after reading ``payload``."""
    read = model.model_validate(payload)
    return json.loads(read.model_dump_json(exclude_unset=True))


@pytest.mark.parametrize("payload", [K8S_SUMMARY, YARN_SUMMARY], ids=["k8s", "yarn"])
def test_a_job_list_item_of_openpai_reads_and_writes_back_unchanged(
    payload: dict[str, Any],
) -> None:
    assert round_trip(rest.PaiJobSummary, payload) == payload


def test_the_job_list_is_a_bare_array_of_items() -> None:
    payload = [K8S_SUMMARY, YARN_SUMMARY]
    jobs = rest.PaiJobList.model_validate(payload)
    assert [job.name for job in jobs.root] == ["ps-worker-digits", "hello-world"]
    assert json.loads(jobs.model_dump_json(exclude_unset=True)) == payload


@pytest.mark.parametrize(
    "payload", [K8S_DETAIL, YARN_DETAIL, SWAGGER_DETAIL], ids=["k8s", "yarn", "swagger"]
)
def test_a_job_detail_of_openpai_reads_and_writes_back_unchanged(payload: dict[str, Any]) -> None:
    assert round_trip(rest.PaiJobDetail, payload) == payload


def test_python_names_are_snake_case_and_the_wire_names_are_openpai_camel_case() -> None:
    detail = rest.PaiJobDetail.model_validate(K8S_DETAIL)
    worker = detail.task_roles["worker"].task_statuses[1]
    assert worker.container_ip == "10.0.0.6"
    assert worker.container_exit_code == 1
    assert detail.job_status.app_exit_trigger_task_role_name == "worker"
    assert detail.job_status.state is rest.TaskState.FAILED
    assert detail.job_status.state.terminal
    wire = detail.model_dump(mode="json")
    assert wire["jobStatus"]["appExitTriggerTaskIndex"] == 1
    assert "job_status" not in wire, "answers are written with OpenPAI's names by default"
    built = rest.PaiTaskStatus(task_index=0, task_state=rest.TaskState.WAITING)
    assert built.model_dump(mode="json", exclude_unset=True) == {
        "taskIndex": 0,
        "taskState": "WAITING",
    }


def test_times_are_integer_milliseconds_and_a_gpu_count_sent_as_text_reads_as_a_number() -> None:
    # The k8s rest-server took totalGpuNumber from a Kubernetes annotation, a string.
    summary = rest.PaiJobSummary.model_validate({**K8S_SUMMARY, "totalGpuNumber": "2"})
    assert summary.total_gpu_number == 2
    assert summary.created_time == 1700000000123
    with pytest.raises(ValidationError):
        rest.PaiJobSummary.model_validate({**K8S_SUMMARY, "createdTime": "yesterday"})


def test_a_state_openpai_never_had_is_refused() -> None:
    with pytest.raises(ValidationError) as caught:
        rest.PaiJobSummary.model_validate({**K8S_SUMMARY, "state": "QUEUED"})
    assert [e["loc"] for e in caught.value.errors()] == [("state",)]
    assert {s.value for s in rest.TaskState} == {
        "WAITING",
        "RUNNING",
        "STOPPING",
        "STOPPED",
        "SUCCEEDED",
        "FAILED",
    }


def test_fields_of_a_later_rest_server_are_ignored() -> None:
    later = {**K8S_SUMMARY, "tags": ["nightly"], "jobPriority": "default"}
    assert round_trip(rest.PaiJobSummary, later) == K8S_SUMMARY


def test_submission_and_stop_answers_are_a_status_and_a_message() -> None:
    submitted = {"status": 202, "message": "Update job hello-world for user bob successfully."}
    assert round_trip(rest.PaiMessage, submitted) == submitted
    older = {"message": "update job hello-world successfully"}
    assert round_trip(rest.PaiMessage, older) == older


def test_the_stop_request_names_an_execution_type_and_nothing_else() -> None:
    assert rest.PaiExecutionTypeChange.model_validate({"value": "STOP"}).value == "STOP"
    for bad in ({"value": "PAUSE"}, {"value": "STOP", "force": True}, {}):
        with pytest.raises(ValidationError):
            rest.PaiExecutionTypeChange.model_validate(bad)


def test_an_error_answer_is_a_code_and_a_message() -> None:
    error = {"code": "NoJobError", "message": "Job bob~nope is not found."}
    read = rest.PaiError.model_validate(error)
    assert read.code == rest.PaiErrorCode.NO_JOB
    assert round_trip(rest.PaiError, error) == error
    with_stack = {**error, "stack": ["NotFoundError: Job bob~nope is not found.", "    at get"]}
    assert round_trip(rest.PaiError, with_stack) == with_stack


def test_a_page_of_jobs_carries_the_total_count() -> None:
    page = {"totalCount": 7, "data": [K8S_SUMMARY]}
    assert round_trip(rest.PaiJobPage, page) == page
