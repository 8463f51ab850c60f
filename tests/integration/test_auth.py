"""Users, tokens and who may do what, on a real master and agent: every route wants a token,
owners alone (and admins) change their experiments and jobs, and the command line signs in."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from assay import rest
from assay.client import Client
from assay.errors import AssayError, Forbidden, TooManyRequests, Unauthorized
from tests.integration.cluster import Cluster, serve

pytestmark = pytest.mark.integration

OPEN = {
    ("GET", "/api/v1/master"),
    ("POST", "/api/v1/auth/login"),
    ("POST", "/api/v1/auth/browser-login"),
    ("POST", "/api/v1/auth/one-time"),
}
"""The only routes answered without a token: the health check and signing in (with a password,
a program's or a browser's, or with a one-time sign-in token)."""


def paused_forever(name: str = "owned") -> str:
    return yaml.safe_dump(
        {
            "name": name,
            "entrypoint": "python3 train.py",
            "hyperparameters": {"step_seconds": 0.05},
            "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 10**6}},
        }
    )


@pytest.fixture(scope="module")
def cluster(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Cluster]:
    c = Cluster(tmp_path_factory.mktemp("auth") / "home")
    c.start_master()
    yield from serve(c, request)


def concrete(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "1", path)


def test_every_route_but_health_and_sign_in_refuses_a_request_without_a_token(
    cluster: Cluster,
) -> None:
    # The schema is built on its first request (seconds of one core on a loaded machine).
    spec = httpx.get(f"{cluster.url}/openapi.json", timeout=60).json()
    answered: dict[tuple[str, str], int] = {}
    with httpx.Client(base_url=cluster.url, timeout=30) as http:
        for path, operations in spec["paths"].items():
            for method in operations:
                route = (method.upper(), path)
                if route in OPEN:
                    continue
                answer = http.request(method.upper(), concrete(path), json={})
                answered[route] = answer.status_code
                assert answer.json()["error"]["type"] == "Unauthorized", route
    assert set(answered.values()) == {401}, answered
    assert len(answered) >= 30
    # The agents' socket has its own token; the context download takes a user's or an agent's.
    assert httpx.get(f"{cluster.url}/api/v1/contexts/1").status_code == 401


def test_a_wrong_revoked_or_garbled_token_is_refused(cluster: Cluster) -> None:
    for token in ("nonsense", "assay_" + "x" * 43, "a" * 5000):
        answer = httpx.get(
            f"{cluster.url}/api/v1/experiments", headers={"Authorization": f"Bearer {token}"}
        )
        assert answer.status_code == 401, token
    allocation_like = httpx.post(
        f"{cluster.url}/api/v1/experiments/1/kill", headers={"Authorization": "Basic YTpi"}
    )
    assert allocation_like.status_code == 401


def test_a_user_cannot_change_another_users_experiment_but_an_admin_can(
    cluster: Cluster, tmp_path: Path
) -> None:
    alice = cluster.add_user("alice")
    bob = cluster.add_user("bob")
    context = Path(__file__).parent / "contexts" / "counter"
    from assay.context import pack_context

    data = pack_context(context).data
    exp = alice.create_experiment(paused_forever("alices"), data, activate=False)
    assert exp.owner == "alice"

    for action in ("activate", "pause", "cancel", "kill", "archive"):
        with pytest.raises(Forbidden, match=r"belongs to alice.*signed in as bob"):
            bob.transition(exp.id, action)
    with pytest.raises(Forbidden) as refused:
        bob.set_experiment(exp.id, rest.ExperimentResources(priority=1))
    assert refused.value.message == (
        f"experiment {exp.id} belongs to alice; only its owner or an admin may change it "
        "(you are signed in as bob)"
    )
    assert alice.experiment(exp.id).state == "PAUSED", "nothing bob asked was done"
    # Reading is open to every signed-in user.
    assert bob.experiment(exp.id).name == "alices"

    assert alice.transition(exp.id, "activate").state == "ACTIVE"
    (job,) = [j for j in bob.jobs().jobs if j.experiment_id == exp.id]
    assert job.user == "alice"
    with pytest.raises(Forbidden, match=f"job {job.id} belongs to alice"):
        bob.update_job(job.id, rest.JobChange(priority=1))
    assert cluster.client.transition(exp.id, "pause").state == "PAUSED"
    assert cluster.client.transition(exp.id, "kill").state in ("STOPPING_KILLED", "CANCELED")

    owners = {e.owner for e in cluster.client.list_experiments().experiments}
    assert "alice" in owners
    assert [e.name for e in cluster.client.list_experiments(user="alice").experiments] == ["alices"]
    assert bob.list_experiments(user="bob").experiments == []


def test_only_an_admin_creates_users_and_a_user_changes_only_their_own_password(
    cluster: Cluster,
) -> None:
    carol = cluster.add_user("carol")
    with pytest.raises(Forbidden, match="only an admin may create users"):
        carol.create_user(rest.UserCreate(username="mallory", password="long-enough"))
    with pytest.raises(Forbidden):
        carol.change_user("admin", rest.UserChange(password="taken-over!"))
    with pytest.raises(Forbidden):
        carol.change_user("carol", rest.UserChange(admin=True))
    assert carol.me().admin is False

    other_session = cluster.sign_in("carol", "password-of-a-user")
    carol.change_user("carol", rest.UserChange(password="a-new-password"))
    assert carol.me().username == "carol", "the session that changed it stays"
    with pytest.raises(Unauthorized):
        other_session.me()
    with pytest.raises(Unauthorized):
        cluster.sign_in("carol", "password-of-a-user")
    assert cluster.sign_in("carol", "a-new-password").me().username == "carol"


def test_a_deactivated_user_is_signed_out_for_good_and_cannot_sign_in_until_activated(
    cluster: Cluster,
) -> None:
    dave = cluster.add_user("dave")
    token = dave.create_token(rest.TokenCreate(description="ci")).token
    cluster.client.change_user("dave", rest.UserChange(active=False))
    with pytest.raises(Unauthorized):
        dave.me()
    with pytest.raises(Unauthorized):
        Client(cluster.url, token=token).me()
    with pytest.raises(Unauthorized, match="wrong user name or password"):
        cluster.sign_in("dave", "password-of-a-user")
    cluster.client.change_user("dave", rest.UserChange(active=True))
    # Deactivating revoked them: activating gives back no session or token, only sign-in.
    with pytest.raises(Unauthorized):
        Client(cluster.url, token=token).me()
    with pytest.raises(Unauthorized):
        dave.me()
    assert cluster.sign_in("dave", "password-of-a-user").me().username == "dave"


def test_the_last_admin_cannot_be_demoted_or_deactivated(cluster: Cluster) -> None:
    from assay.errors import Conflict

    with pytest.raises(Conflict, match="only active admin"):
        cluster.client.change_user("admin", rest.UserChange(active=False))
    with pytest.raises(Conflict, match="only active admin"):
        cluster.client.change_user("admin", rest.UserChange(admin=False))


def test_access_tokens_work_until_revoked_and_are_stored_only_as_digests(
    cluster: Cluster,
) -> None:
    erin = cluster.add_user("erin")
    made = erin.create_token(rest.TokenCreate(description="nightly", lifespan_days=7))
    assert made.token.startswith("assay_") and made.info.expires_at is not None
    script = Client(cluster.url, token=made.token)
    assert script.me().username == "erin"
    listed = erin.tokens()
    assert [t.description for t in listed] == ["nightly"]
    with pytest.raises(Forbidden):
        erin.tokens(all_users=True)
    frank = cluster.add_user("frank")
    with pytest.raises(Forbidden, match="belongs to erin"):
        frank.revoke_token(made.info.id)
    erin.revoke_token(made.info.id)
    with pytest.raises(Unauthorized):
        script.me()
    database = (cluster.home / "assay.db").read_bytes()
    assert made.token.encode() not in database


def test_signing_out_ends_the_session(cluster: Cluster) -> None:
    gina = cluster.add_user("gina")
    gina.logout()
    with pytest.raises(Unauthorized):
        gina.me()


def test_password_guessing_is_slowed_down_after_ten_tries(cluster: Cluster) -> None:
    cluster.add_user("henry")  # signs in once
    guesses = Client(cluster.url)
    for attempt in range(9):
        with pytest.raises(Unauthorized):
            guesses.login("henry", f"guess-{attempt}")
    with pytest.raises(TooManyRequests, match="try again in"):
        guesses.login("henry", "password-of-a-user")


def test_the_command_line_signs_in_keeps_the_session_and_signs_out(cluster: Cluster) -> None:
    cluster.add_user("ivy")
    env = {**cluster.env, "XDG_CONFIG_HOME": str(cluster.home.parent / "ivy-config")}

    def assay(*args: str, stdin: str = "") -> tuple[int, str, str]:
        import subprocess
        import sys

        done = subprocess.run(
            [sys.executable, "-c", "from assay.cli import main; main()", *args],
            check=False,
            input=stdin,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        return done.returncode, done.stdout, done.stderr

    code, _, err = assay("e", "list")
    assert code == 1 and "sign in first" in err and "Traceback" not in err
    code, out, err = assay("user", "login", "ivy", stdin="password-of-a-user\n")
    assert code == 0, err
    assert "signed in" in out and "as ivy" in out
    stored = cluster.home.parent / "ivy-config" / "assay" / "auth.json"
    assert stored.stat().st_mode & 0o777 == 0o600
    assert assay("user", "whoami")[1].strip() == "ivy"
    code, _, err = assay("user", "create", "eve", stdin="long-enough\nlong-enough\n")
    assert code == 1 and "only an admin may create users" in err and "Traceback" not in err
    code, out, err = assay("token", "create", "--description", "ci")
    assert code == 0, err
    token = out.strip()
    assert Client(cluster.url, token=token).me().username == "ivy"
    code, out, _ = assay("token", "list", "--json")
    assert code == 0 and '"description": "ci"' in out and token not in out
    code, out, err = assay("user", "logout")
    assert code == 0 and "signed out" in out, err
    code, _, err = assay("user", "whoami")
    assert code == 1 and "sign in first" in err
    # A script's token from the environment needs no sign-in.
    env["ASSAY_USER_TOKEN"] = token
    assert assay("user", "whoami")[1].strip() == "ivy"


def test_the_command_line_names_what_was_refused_and_why(cluster: Cluster) -> None:
    env = {**cluster.env, "ASSAY_USER_TOKEN": "garbage"}
    refused = subprocess.run(
        [sys.executable, "-c", "from assay.cli import main; main()", "e", "list"],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert "the token in ASSAY_USER_TOKEN was refused" in refused.stderr, refused.stderr

    nobody = cluster.cli("e", "list", "--user", "nobody")
    assert nobody.returncode == 1 and nobody.stderr.strip() == "error: no user called 'nobody'"
    assert cluster.cli("e", "list", "--user", "admin").returncode == 0

    # A path no route has (``/users/`` for an empty name) is the API's 404 for any method: the
    # client says so rather than reading an empty body as the user.
    with pytest.raises(AssayError, match="no such path: PATCH /api/v1/users/"):
        cluster.client.http.request("PATCH", "/api/v1/users/", json_body={"active": False})
