"""OpenPAI's REST API v2 job shapes, so scripts written against an OpenPAI rest-server keep
working against assay.

The shapes are those OpenPAI's rest-server answered (``src/rest-server`` in microsoft/pai: the
k8s job model's ``convertFrameworkSummary`` and ``convertFrameworkDetail``, the v2 job controller
and the express error handler) and its OpenAPI document (``src/rest-server/docs/swagger.yaml``,
schemas ``JobSummary``, ``JobDetail``, ``Response``). Field names on the wire are OpenPAI's
camelCase; in Python they are snake_case (``container_ip`` reads and writes ``containerIp``).
Every time is an integer count of milliseconds since the Unix epoch, as in OpenPAI.

The routes they belong to:

- ``GET /api/v2/jobs`` -> a JSON array of :class:`PaiJobSummary` (:data:`PaiJobList`).
- ``GET /api/v2/jobs/{user}~{job}`` -> :class:`PaiJobDetail`.
- ``POST /api/v2/jobs`` (the protocol YAML as ``text/yaml``) -> ``202`` with :class:`PaiMessage`.
- ``PUT /api/v2/jobs/{user}~{job}/executionType`` with :class:`PaiExecutionTypeChange`
  -> ``202`` with :class:`PaiMessage`.
- Every error -> :class:`PaiError` with the HTTP status that goes with its code.

Nothing here reads a database or knows the master: it is only the wire.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

from pydantic import ConfigDict, Field, RootModel
from pydantic.alias_generators import to_camel

from assay.protocol import TaskState
from assay.rest._common import Lenient, Request, Resource


class PaiExecutionType(StrEnum):
    """What the job was last asked to do: run (START) or stop (STOP)."""

    START = "START"
    STOP = "STOP"


class PaiErrorCode(StrEnum):
    """The ``code`` of an error answer: the names in the rest-server's OpenAPI ``Response``
    schema. Each goes with one HTTP status (in parentheses) in the rest-server."""

    BAD_CONFIGURATION = "BadConfigurationError"
    """(400) The job protocol is invalid."""
    CONFLICT_JOB = "ConflictJobError"
    """(409) A job of that name exists for that user."""
    CONFLICT_USER = "ConflictUserError"
    CONFLICT_VC = "ConflictVcError"
    FORBIDDEN_USER = "ForbiddenUserError"
    """(403) The user may not do this (e.g. stop another user's job)."""
    FORBIDDEN_KEY = "ForbiddenKeyError"
    INCORRECT_PASSWORD = "IncorrectPasswordError"
    INVALID_PARAMETERS = "InvalidParametersError"
    """(400) A bad query parameter (e.g. ``limit`` over its maximum)."""
    NO_API = "NoApiError"
    """(404) No such route."""
    NO_JOB = "NoJobError"
    """(404) No such job."""
    NO_JOB_CONFIG = "NoJobConfigError"
    NO_JOB_SSH_INFO = "NoJobSshInfoError"
    NO_USER = "NoUserError"
    NO_GROUP = "NoGroupError"
    NO_VIRTUAL_CLUSTER = "NoVirtualClusterError"
    """(400 on submit, 404 on read) The virtual cluster does not exist."""
    READ_ONLY_JOB = "ReadOnlyJobError"
    REMOVE_ADMIN = "RemoveAdminError"
    READ_ONLY_VC = "ReadOnlyVcError"
    REMOVE_RUNNING_VC = "RemoveRunningVcError"
    UNAUTHORIZED_USER = "UnauthorizedUserError"
    """(401) No token, or a bad one."""
    NO_ENOUGH_QUOTA = "NoEnoughQuotaError"
    NOT_IMPLEMENTED = "NotImplementedError"
    UNKNOWN = "UnknownError"
    """(500) Anything else."""


class _PaiResource(Resource):
    """An OpenPAI answer: camelCase on the wire, snake_case in Python, either accepted."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
    )


class PaiRetryDetails(_PaiResource):
    """How the job's retries divide by cause; the three add up to ``retries``."""

    user: int = Field(default=0, description="Retries after a failure of the user's code.")
    platform: int = Field(default=0, description="Retries after a failure of the platform.")
    resource: int = Field(
        default=0, description="Retries because resources did not come in time (always 0 on k8s)."
    )


class _PaiJobCommon(_PaiResource):
    """What the list item and the detail's ``jobStatus`` share."""

    username: str = Field(description="The owner, or 'unknown'.")
    state: TaskState
    sub_state: str = Field(
        description="The launcher's own state, as it named it: AttemptRunning, Completed... "
        "(k8s), FRAMEWORK_COMPLETED... (yarn). Informational only."
    )
    execution_type: PaiExecutionType = Field(description="START, or STOP once stopped.")
    retries: int = Field(description="How often the whole job was retried.")
    retry_details: PaiRetryDetails = Field(default_factory=PaiRetryDetails)
    retry_delay_time: int | None = Field(
        default=None, description="Seconds until the next retry while one is pending."
    )
    created_time: int = Field(description="Submission time, ms since the epoch.")
    completed_time: int | None = Field(
        description="End time, ms since the epoch; null (k8s rest-servers sent 0) until it ends."
    )
    app_exit_code: int | None = Field(description="The job's exit code once it ended.")
    virtual_cluster: str = Field(description="The virtual cluster (assay: resource pool).")


class PaiJobSummary(_PaiJobCommon):
    """One item of ``GET /api/v2/jobs``."""

    name: str = Field(description="The job's name, without the user (``{user}~{name}``).")
    debug_id: str | None = Field(
        default=None, description="The launcher's internal name of the job, for debugging."
    )
    framework_name: str | None = Field(
        default=None, description="Later rest-servers: the launcher's name of the job."
    )
    total_gpu_number: int = Field(
        default=0, description="GPUs of all instances together (k8s sent it as a string)."
    )
    total_task_number: int = Field(default=0, description="Instances of all task roles.")
    total_task_role_number: int = Field(default=0, description="How many task roles.")


PaiJobList = RootModel[list[PaiJobSummary]]
"""``GET /api/v2/jobs``: a bare JSON array, newest first."""


class PaiJobPage(_PaiResource):
    """``GET /api/v2/jobs?withTotalCount=true`` on database-backed rest-servers (v1.x): one page
    of the list and the number of all matching jobs.

    Less certain than the rest of this module: the v1.x controller passes ``withTotalCount`` to
    the model, which was not found in the stored sources; this is the shape its web portal read.
    """

    total_count: int
    data: list[PaiJobSummary]


class PaiExitSpec(_PaiResource):
    """An entry of OpenPAI's job exit spec: what an exit code means."""

    code: int
    phrase: str | None = Field(default=None, description="A name for the code, e.g. Succeeded.")
    issuer: str | None = None
    causer: str | None = None
    type: str | None = Field(default=None, description="e.g. USER_SUCCESS, USER_FAILURE.")
    stage: str | None = None
    behavior: str | None = None
    reaction: str | None = Field(default=None, description="e.g. NEVER_RETRY.")
    reason: str | None = None
    repro: list[str] | None = None
    solution: list[str] | None = None


class PaiExitMessages(_PaiResource):
    """Why the job ended, by who said so."""

    container: str | None = None
    runtime: dict[str, Any] | str | None = Field(
        default=None, description="What the runtime wrote (an object on k8s)."
    )
    launcher: str | None = None


class PaiJobStatus(_PaiJobCommon):
    """``jobStatus`` of ``GET /api/v2/jobs/{user}~{job}``."""

    app_id: str | None = Field(default=None, description="A unique id of the current attempt.")
    app_progress: float | None = Field(default=None, description="0 running, 1 ended.")
    app_tracking_url: str | None = None
    app_launched_time: int | None = Field(
        default=None, description="Start of the last attempt, ms since the epoch."
    )
    app_completed_time: int | None = Field(
        default=None, description="End of the last attempt, ms since the epoch."
    )
    app_exit_spec: PaiExitSpec | None = None
    app_exit_diagnostics: str | None = None
    app_exit_messages: PaiExitMessages | None = None
    app_exit_trigger_message: str | None = Field(
        default=None, description="What ended the job, e.g. 'All Tasks are completed'."
    )
    app_exit_trigger_task_role_name: str | None = Field(
        default=None, description="The task role whose instance ended the job."
    )
    app_exit_trigger_task_index: int | None = Field(
        default=None, description="The index of the instance that ended the job."
    )
    app_exit_type: str | None = None


class PaiTaskStatus(_PaiResource):
    """One instance of a task role."""

    task_index: int = Field(description="Index in its task role, from 0.")
    task_state: TaskState
    container_id: str | None = Field(default=None, description="The instance's container.")
    container_ip: str | None = Field(
        default=None, description="The host's IP (host networking): where its ports listen."
    )
    container_node_name: str | None = None
    container_ports: dict[str, int | str] = Field(
        default_factory=dict,
        description="Port label -> its ports: one number, or several joined by commas "
        "(later rest-servers sent strings).",
    )
    container_gpus: int | str | None = Field(
        default=None, description="Bitmask of the GPUs it holds (bit i: GPU i)."
    )
    container_log: str | None = Field(default=None, description="Where its log can be read.")
    container_exit_code: int | None = None
    container_exit_spec: PaiExitSpec | None = None
    container_exit_diagnostics: str | None = None
    retries: int | None = None
    accountable_retries: int | None = None
    created_time: int | None = None
    completed_time: int | None = None
    current_attempt_launched_time: int | None = None
    current_attempt_completed_time: int | None = None


class PaiTaskRoleStatus(_PaiResource):
    name: str


class PaiTaskRole(_PaiResource):
    """A task role of a job's detail: its name and its instances in index order."""

    task_role_status: PaiTaskRoleStatus
    task_statuses: list[PaiTaskStatus]


class PaiJobDetail(_PaiResource):
    """``GET /api/v2/jobs/{user}~{job}``."""

    name: str
    job_status: PaiJobStatus
    task_roles: dict[str, PaiTaskRole] = Field(description="By task role name.")
    debug_id: str | None = None
    framework_name: str | None = None


class PaiMessage(_PaiResource):
    """The answer to a submission (``POST /api/v2/jobs``) and to a start or stop: HTTP 202 with
    e.g. ``{"status": 202, "message": "Update job x for user u successfully."}``."""

    status: int | None = Field(default=None, description="The HTTP status again.")
    message: str


class PaiExecutionTypeChange(Request):
    """``PUT /api/v2/jobs/{user}~{job}/executionType``: stop (or start) a job."""

    value: Annotated[PaiExecutionType, Lenient]


class PaiError(_PaiResource):
    """Every error answer of the rest-server: ``{"code": ..., "message": ...}`` (its express
    error handler added ``stack`` only in development)."""

    code: str = Field(description="Usually one of PaiErrorCode.")
    message: str
    stack: list[str] | None = None
