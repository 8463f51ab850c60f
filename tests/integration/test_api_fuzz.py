"""The API driven by schemathesis from its own OpenAPI against a real master and agent, with
every check schemathesis has: no input makes it answer 5xx; every answer has a status, media
type, headers and schema the OpenAPI declares; what the schema refuses is refused and what it
allows is taken; a method a path does not declare is 405 with an ``Allow`` header. A check is
left out for an operation only where it cannot apply, with the reason (``NOT_APPLICABLE``). A
trial runs the whole time, and the trial-process endpoints are called with its allocation's
token, so reports reach the code that stores them."""

from __future__ import annotations

import contextlib
import re
import secrets
import tempfile
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import schemathesis
import sqlalchemy
import yaml
from hypothesis import HealthCheck, settings
from schemathesis import Case
from schemathesis.checks import CHECKS, CheckFunction, load_all_checks
from schemathesis.specs.openapi.checks import positive_data_acceptance

from assay import rest
from assay.client import Client, HttpSession
from assay.errors import AssayError, Forbidden, InvalidRequest, NotFound, Unauthorized
from tests.integration.cluster import Cluster, wait_for

pytestmark = pytest.mark.integration

load_all_checks()
EVERY_CHECK: list[CheckFunction] = CHECKS.get_all()
"""Every check schemathesis has (status code, content type, headers and schema conformance,
negative data rejection, positive data acceptance, unsupported method, ...)."""


@dataclass(frozen=True)
class NotApplicable:
    """A check left out for the operations ``method`` and ``path`` (a regular expression)
    match, and why it cannot apply to them."""

    method: str
    path: str
    check: CheckFunction
    reason: str


FREE_TEXT_CONFIG = (
    "the config is text (YAML or JSON) in a format the master reads: which texts are valid "
    "configs is the config's own schema and checks, not this document's, so a request the "
    "document allows is refused with 400 naming the config's problems (and its context part "
    "must be a tar.gz the document cannot describe either)"
)

OVERRIDES = (
    "its overrides are config text (key.path=value) applied to the experiment's config: "
    "which keys and values make a valid config is the config's own schema and checks, not "
    "this document's, so a request the document allows is refused with 400 naming them"
)

NOT_APPLICABLE = [
    NotApplicable(
        "POST", r"^/api/v1/experiments(/validate)?$", positive_data_acceptance, FREE_TEXT_CONFIG
    ),
    NotApplicable(
        "POST", r"^/api/v1/jobs(/validate)?$", positive_data_acceptance, FREE_TEXT_CONFIG
    ),
    NotApplicable("POST", r"^/api/v2/jobs$", positive_data_acceptance, FREE_TEXT_CONFIG),
    NotApplicable(
        "POST", r"^/api/v1/(notebooks|shells)$", positive_data_acceptance, FREE_TEXT_CONFIG
    ),
    NotApplicable(
        "POST",
        r"^/api/v1/experiments/\{[^}]+\}/(fork|continue)$",
        positive_data_acceptance,
        OVERRIDES,
    ),
]


def checks_for(case: Case) -> list[CheckFunction]:
    """Every check but those that cannot apply to ``case``'s operation."""
    left_out = {
        n.check
        for n in NOT_APPLICABLE
        if n.method == case.operation.method.upper() and re.search(n.path, case.operation.path)
    }
    return [check for check in EVERY_CHECK if check not in left_out]


EXAMPLES = 6
"""Examples per operation and test: enough to reach every parameter's bounds (derandomized,
hypothesis tries each bound among its first examples), quick enough for every run of the
suite."""

LONG_POLL = 0.05
"""Seconds a fuzzed long-poll may wait: the generated timeouts go up to ten minutes."""

LONG_POLLS = {
    "/wait": "timeout",
    "/searcher/operation": "timeout",
    "/signals/preemption": "timeout_seconds",
}
"""The long-poll routes (by the end of their path) and their timeout parameter."""

FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)


@dataclass(frozen=True)
class Target:
    cluster: Cluster
    trial_id: int
    allocation_id: str


def _forever() -> str:
    config = {
        "name": "fuzzed",
        "entrypoint": "python3 train.py",
        "hyperparameters": {"step_seconds": 0.05, "checkpoint_every": 5},
        "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 10**6}},
    }
    return yaml.safe_dump(config)


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest) -> Iterator[str | None]:
    """The master's database: SQLite in its home (None), or a fresh PostgreSQL database."""
    if request.param == "sqlite":
        yield None
        return
    import psycopg

    admin: str = request.getfixturevalue("pg_server")
    name = f"assay_fuzz_{secrets.token_hex(6)}"
    libpq = admin.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(libpq, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"{admin.rsplit('/', 1)[0]}/{name}"
    finally:
        with psycopg.connect(libpq, autocommit=True) as conn:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
                (name,),
            )
            conn.execute(f'DROP DATABASE IF EXISTS "{name}"')


def running_trial(cluster: Cluster) -> Target:
    """A new experiment's trial, running, with a checkpoint."""
    exp_id = cluster.submit(_forever())
    trial_id = wait_for("the trial", lambda: cluster.client.trials(exp_id))[0].id
    wait_for("a checkpoint", lambda: cluster.client.trial(trial_id).latest_checkpoint)
    allocation = cluster.client.trial(trial_id).allocations[-1]
    return Target(cluster, trial_id, allocation.id)


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory, database: str | None) -> Iterator[Target]:
    cluster = Cluster(tmp_path_factory.mktemp("fuzz") / "home", db=database)
    try:
        cluster.start_master()
        cluster.start_agent("agent-1", slots=1)
        yield running_trial(cluster)
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def fresh(target: Target) -> Target:
    """A trial running after the fuzzing, which may have killed the first one: its allocation's
    token must be live for a report to get past the token check to the validation. What the
    fuzzing left running (the first experiment, its forks, archived ones too) is killed first,
    so the agent's one slot is free for it."""
    client = target.cluster.client
    for archived in (False, True):
        for exp in client.list_experiments(archived=archived, limit=1000).experiments:
            if not exp.state.terminal:
                with contextlib.suppress(AssayError):  # ended meanwhile
                    client.transition(exp.id, "kill")
    return running_trial(target.cluster)


def _experiment_of(target: Target) -> int:
    return target.cluster.client.trial(target.trial_id).experiment_id


def token_of(target: Target) -> str:
    """The token of the trial's live allocation (its process has it in its environment)."""
    url = target.cluster.db or f"sqlite:///{target.cluster.home / 'assay.db'}"
    engine = sqlalchemy.create_engine(url)
    try:
        with engine.connect() as conn:
            token = conn.execute(
                sqlalchemy.text(
                    "SELECT token FROM allocations WHERE trial_id = :trial AND state != :ended "
                    "ORDER BY created_at DESC"
                ),
                {"trial": target.trial_id, "ended": rest.AllocationState.TERMINATED.value},
            ).scalar()
    finally:
        engine.dispose()
    return str(token or "no-live-allocation")


def openapi() -> dict[str, Any]:
    """The OpenAPI the master serves, made by the same code without starting one (the tests
    are generated from it when the module is collected)."""
    from assay.api import create_app
    from assay.config import MasterConfig
    from assay.db import Database
    from assay.master import Master

    db = Database("sqlite://")
    try:
        with tempfile.TemporaryDirectory(prefix="assay-openapi-") as home:
            return create_app(Master(MasterConfig(), db, Path(home))).openapi()
    finally:
        db.dispose()


SPEC = openapi()


@schemathesis.serializer("application/gzip")
def _as_uploaded(_ctx: schemathesis.SerializationContext, value: Any) -> bytes:
    """A context archive part as the bytes a client uploads (invalid ones included: the
    master must refuse those with 400)."""
    return value if isinstance(value, bytes) else str(value).encode()


schema = schemathesis.openapi.from_dict(SPEC)


QUERY_VALUE_BYTES = 16_000
"""The most bytes a query value takes in the URL, percent-encoded. The master's HTTP server
refuses a request whose head passes about 64 KiB with its own text/plain 400 before the API sees
it (measured: a 60 kB URL reaches the API, a 70 kB one does not); the longest valid value
(``trial_ids``, 11,000 ASCII characters) fits, but an invalid one of as many non-ASCII
characters is six to twelve times longer once encoded: cut, it is as invalid, and reaches the
API."""


def bounded(case: Case) -> None:
    """Long-polls answer at once, and log streams are read as pages: a followed stream of a
    running trial would never end. A query value too long for the HTTP server is cut to fit."""
    query: dict[str, Any] = case.query if case.query is not None else {}
    for suffix, name in LONG_POLLS.items():
        if case.path.endswith(suffix) and (name not in query or _number(query[name]) > LONG_POLL):
            query[name] = LONG_POLL
    if "follow" in query:
        query["follow"] = "false"
    for name, value in query.items():
        if isinstance(value, str):
            query[name] = _fitting(value)
    case.query = query


def _fitting(value: str) -> str:
    """``value``, halved until it takes at most :data:`QUERY_VALUE_BYTES` in a URL."""
    while len(quote(value)) > QUERY_VALUE_BYTES:
        value = value[: len(value) // 2]
    return value


def _number(value: Any) -> float:
    """A query value as the server reads it; anything but a number counts as zero."""
    if isinstance(value, list) and value:
        value = value[-1]
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


def aimed(case: Case, target: Target) -> None:
    """Valid ids of a trial-process endpoint point at the running trial and its allocation."""
    params: dict[str, Any] = case.path_parameters or {}
    trial_id = params.get("trial_id")
    if isinstance(trial_id, int) and 0 <= trial_id <= rest.INT_MAX:
        params["trial_id"] = target.trial_id
    if isinstance(params.get("allocation_id"), str):
        params["allocation_id"] = target.allocation_id


ANSWERS: dict[str, Counter[tuple[str, int]]] = defaultdict(Counter)
"""Statuses answered, by master URL and ``(operation, status)``."""


def call(case: Case, target: Target, *, token: str | None = None) -> None:
    bounded(case)
    headers = {"Authorization": f"Bearer {token}"} if token else None
    response = case.call_and_validate(
        base_url=target.cluster.url, headers=headers, checks=checks_for(case)
    )
    ANSWERS[target.cluster.url][(f"{case.method} {case.path}", response.status_code)] += 1


# The order matters: reports first, while the trial runs; then what may end it (completing its
# searcher operation, an early exit); then every other route, kills and pauses included.


@schema.include(tag="harness").exclude(path_regex="completed_operation|early_exit").parametrize()
@FUZZ
def test_reports_of_a_running_trial(case: Case, target: Target) -> None:
    aimed(case, target)
    call(case, target, token=token_of(target))


@schema.include(path_regex="completed_operation|early_exit").parametrize()
@FUZZ
def test_what_may_end_the_running_trial(case: Case, target: Target) -> None:
    aimed(case, target)
    call(case, target, token=token_of(target))


SIGNS_OUT = "auth/logout|users/|tokens/"
"""Routes that may end the caller's own sign-in (signing out, revoking a token, deactivating
or demoting a user): fuzzed last, each example with a new token of its own."""


class Signer:
    """A live token for each example that may end its own sign-in: a new access token of a
    user of the tests' own, and a new user once an example has ended the sign-in it was made
    from (a password change, a revoked session). A new user per example hashed a password
    twice for each, most of these tests' time."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.user: Client | None = None

    def token(self) -> str:
        if self.user is not None:
            with contextlib.suppress(AssayError):
                return self.user.create_token(rest.TokenCreate(description="fuzz")).token
        self.user = self.cluster.add_user(f"fuzz-{secrets.token_hex(4)}")
        return self.user.create_token(rest.TokenCreate(description="fuzz")).token


SIGNERS: dict[str, Signer] = {}
"""By master URL."""


def test_every_route_without_signing_in(target: Target) -> None:
    # One request a route: signed out, every route but the few open ones is refused before its
    # input is read, whatever the input (hypothesis's set-up of a test per route took 0.4 s a
    # route, for nothing more). Its answers are checked as the fuzzed ones are.
    for result in schema.get_all_operations():
        operation = result.ok()
        params = {p.name: "1" for p in operation.path_parameters}
        call(operation.Case(method=operation.method.upper(), path_parameters=params), target)


STOPS_THE_CLUSTER = "master/drain"
"""The route ``assay down`` calls: signed in as the admin, it would stop the trials the tests
after it need running; fuzzed without signing in only (its body's bounds are tested with the
command)."""


LIVE_STREAM = "/api/v1/events$"
"""The live event stream never ends while the master runs: fuzzed without signing in only (its
answers, events included, are tested in test_live_events)."""


STARTS_INTERACTIVE = "/api/v1/(notebooks|shells)$"
"""Starting a notebook or shell: signed in, a valid example would start JupyterLab or sshd on the
agent and hold the slot the tests after it need; fuzzed without signing in only (their configs'
checks are tested in test_notebooks, test_shells and the config's unit tests)."""


@(
    schema.exclude(tag="harness")
    .exclude(path_regex=f"{SIGNS_OUT}|{STOPS_THE_CLUSTER}|{LIVE_STREAM}|{STARTS_INTERACTIVE}")
    .parametrize()
)
@FUZZ
def test_every_other_route_signed_in(case: Case, target: Target) -> None:
    call(case, target, token=target.cluster.client.http.token)


@schema.include(path_regex=SIGNS_OUT).parametrize()
@FUZZ
def test_signing_out_and_changing_users(case: Case, target: Target) -> None:
    signer = SIGNERS.setdefault(target.cluster.url, Signer(target.cluster))
    call(case, target, token=signer.token())


def test_the_fuzzing_reached_past_validation(target: Target) -> None:
    # Guards the tests above against fuzzing nothing: the schema is the one the master serves,
    # and the running trial's reports were accepted, not only refused.
    assert target.cluster.client.http.get("/openapi.json") == SPEC
    answers = ANSWERS[target.cluster.url]
    accepted = {op for (op, status), _ in answers.items() if 200 <= status < 300}
    for operation in (
        "POST /api/v1/trials/{trial_id}/metrics",
        "POST /api/v1/trials/{trial_id}/progress",
        "POST /api/v1/checkpoints",
        "GET /api/v1/experiments/{experiment_id}",
    ):
        assert operation in accepted, sorted(answers.items())
    assert sum(answers.values()) >= EXAMPLES * len(list(schema.get_all_operations()))
    served = sum(answers.values())
    failed = sum(n for (_, status), n in answers.items() if status >= 500)
    print(f"\nfuzzed {served} requests; {failed} answered 5xx")  # shown with -s
    unauthorized = {op for (op, status), _ in answers.items() if status == 401}
    assert "GET /api/v1/experiments" in unauthorized and "POST /api/v1/users" in unauthorized


# What the fuzzing found before the API bounded its inputs, each shown answering 400 with the
# field it refuses (the database's own errors were answered 500).


def refused(target: Target, method: str, path: str, body: Any = None, **params: Any) -> set[str]:
    """The fields a 400 answer names."""
    # Trial processes post their reports; users read, and kill.
    as_trial = method == "POST" and not path.endswith("/kill")
    token = token_of(target) if as_trial else target.cluster.client.http.token
    http = HttpSession(target.cluster.url, token=token)
    try:
        with pytest.raises(InvalidRequest) as caught:
            http.request(method, path, json_body=body, params=params or None)
    finally:
        http.close()
    return {d.path for d in caught.value.details}


@pytest.mark.parametrize("value", [2**31, 2**63])
def test_ids_and_offsets_the_database_cannot_hold_are_refused(fresh: Target, value: int) -> None:
    assert refused(fresh, "GET", f"/api/v1/experiments/{value}") == {"path.experiment_id"}
    assert refused(fresh, "POST", f"/api/v1/experiments/{value}/kill") == {"path.experiment_id"}
    assert refused(fresh, "GET", f"/api/v1/trials/{value}/metrics") == {"path.trial_id"}
    assert refused(fresh, "GET", f"/api/v1/contexts/{value}") == {"path.context_id"}
    assert refused(fresh, "GET", "/api/v1/experiments", offset=value) == {"query.offset"}
    logs = f"/api/v1/trials/{fresh.trial_id}/logs"
    assert refused(fresh, "GET", logs, after=value) == {"query.after"}


@pytest.mark.parametrize("steps", [2**31, 2**63])
def test_step_counts_the_database_cannot_hold_are_refused(fresh: Target, steps: int) -> None:
    trial = f"/api/v1/trials/{fresh.trial_id}"
    report = {"group": "validation", "steps_completed": steps, "metrics": {"loss": 1.0}}
    assert refused(fresh, "POST", f"{trial}/metrics", {"reports": [report]}) == {
        "reports.0.steps_completed"
    }
    checkpoint = {"uuid": "6a3c0d2e-5b1f-4c8e-9d7a-2f4b6c8e0a1d", "steps_completed": steps}
    assert refused(fresh, "POST", "/api/v1/checkpoints", checkpoint) == {"steps_completed"}
    done = {"length": steps, "metric": 0.5}
    assert refused(fresh, "POST", f"{trial}/searcher/completed_operation", done) == {"length"}


@pytest.mark.parametrize("metadata", [[1, 2], "steps", 3, True])
def test_checkpoint_metadata_that_is_not_an_object_is_refused(
    fresh: Target, metadata: object
) -> None:
    uuid = "0d9e8f7a-6b5c-4d3e-8f2a-1b0c9d8e7f6a"
    body = {"uuid": uuid, "steps_completed": 1, "metadata": metadata}
    assert refused(fresh, "POST", "/api/v1/checkpoints", body) == {"metadata"}
    with pytest.raises(NotFound):
        fresh.cluster.client.checkpoint(uuid)


def test_nul_characters_are_refused_where_they_would_reach_the_database(fresh: Target) -> None:
    trial = f"/api/v1/trials/{fresh.trial_id}"
    assert refused(fresh, "GET", "/api/v1/checkpoints/a%00b") == {"path.uuid"}
    assert refused(fresh, "GET", f"{trial}/metrics", group="a\x00b") == {"query.group"}
    report = {"group": "a\x00b", "steps_completed": 1, "metrics": {}}
    assert refused(fresh, "POST", f"{trial}/metrics", {"reports": [report]}) == {"reports.0.group"}


def test_a_trials_token_reaches_only_its_own_trial(fresh: Target) -> None:
    http = HttpSession(fresh.cluster.url, token=token_of(fresh))
    experiment = _experiment_of(fresh)
    try:
        for method, path in (
            ("POST", f"/api/v1/experiments/{experiment}/kill"),
            ("GET", "/api/v1/experiments"),
            ("GET", f"/api/v1/trials/{fresh.trial_id}/logs"),
            ("POST", "/api/v1/tokens"),
            ("GET", "/api/v1/contexts/1"),
            ("POST", f"/api/v1/trials/{fresh.trial_id + 1000}/progress"),
        ):
            # Refused: 403 where the token is known but never a user's, 401 where no user
            # route takes it (the agents' context download).
            with pytest.raises((Unauthorized, Forbidden)):
                http.request(
                    method, path, json_body={"progress": 0.5} if method == "POST" else None
                )
    finally:
        http.close()
    assert fresh.cluster.client.experiment(experiment).state == "ACTIVE"
