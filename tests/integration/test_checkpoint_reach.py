"""How far a user's experiment can make the master reach, on a real cluster with a user who is
not an admin: checkpoint storage only under the roots the admin allows and never holding the
master's home; checkpoint ids are UUIDs; a link in a checkpoint's place is not followed, and
the master's own files are not sent even when a trial hard-links them into a checkpoint; a
trial's token reads nothing of another experiment.

The hostile parts are played by a real trial process with its own allocation token, as an
attacker's training code would be."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from assay import rest
from assay.client import Client
from assay.errors import InvalidConfig
from tests.integration.cluster import CONTEXTS, Cluster, serve

pytestmark = pytest.mark.integration

# The trial reports what the master answered to each hostile request, one JSON line each.
HOSTILE = textwrap.dedent(
    """
    import json, os, urllib.request, urllib.error, uuid
    import assay

    info = assay.get_cluster_info()
    master, token = os.environ["ASSAY_MASTER"], os.environ["ASSAY_TOKEN"]


    def call(method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(master + path, data=data, method=method)
        req.add_header("Authorization", "Bearer " + token)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=30) as answer:
                return answer.status
        except urllib.error.HTTPError as exc:
            return exc.code


    with assay.core.init() as core:
        hparams = info.trial.hparams
        base, home, victim, victim_exp = (
            hparams["base"], hparams["home"], hparams["victim"], hparams["victim_exp"]
        )
        os.makedirs(base, exist_ok=True)
        # A directory of the storage named after the master's home, registered by a plain name.
        os.symlink(home, os.path.join(base, "assay-home"))
        plain = call("POST", "/api/v1/checkpoints", {"uuid": "assay-home", "steps_completed": 1})
        # A checkpoint whose directory is a link to the master's home.
        linked = str(uuid.uuid4())
        os.symlink(home, os.path.join(base, linked))
        as_link = call("POST", "/api/v1/checkpoints", {"uuid": linked, "steps_completed": 2})
        # A real checkpoint directory holding a hard link to the master's database.
        hard = str(uuid.uuid4())
        os.makedirs(os.path.join(base, hard))
        os.link(os.path.join(home, "assay.db"), os.path.join(base, hard, "weights.bin"))
        with_hardlink = call("POST", "/api/v1/checkpoints", {"uuid": hard, "steps_completed": 3})
        # Reads of another user's experiment with this trial's token.
        theirs = call("GET", f"/api/v1/checkpoints/{victim}")
        their_files = call("GET", f"/api/v1/checkpoints/{victim}/files")
        their_best = call("GET", f"/api/v1/experiments/{victim_exp}/searcher/best_validation")
        their_exp = call("GET", f"/api/v1/experiments/{victim_exp}")
        their_kill = call("POST", f"/api/v1/experiments/{victim_exp}/kill")
        own_exp = info.trial.experiment_id
        own_best = call("GET", f"/api/v1/experiments/{own_exp}/searcher/best_validation")
        print("HOSTILE " + json.dumps({
            "plain": plain, "as_link": as_link, "with_hardlink": with_hardlink,
            "linked": linked, "hard": hard, "theirs": theirs, "their_files": their_files,
            "their_best": their_best, "own_best": own_best, "their_exp": their_exp,
            "their_kill": their_kill,
        }), flush=True)
        for op in core.searcher.operations():
            core.train.report_validation_metrics(op.length, {"loss": 1.0})
            op.report_completed(1.0)
    """
)


@pytest.fixture(scope="module")
def c(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("reach")
    # The admin allows one shared directory for users' checkpoint storage.
    cluster = Cluster(root / "home", allowed_storage=[root / "shared"])
    cluster.start_master()
    cluster.start_agent("agent-1", slots=1)
    yield from serve(cluster, request)


@pytest.fixture(scope="module")
def mallory(c: Cluster) -> Client:
    return c.add_user("mallory")


@pytest.fixture(scope="module")
def victim(c: Cluster) -> rest.Experiment:
    """The admin's completed experiment, with checkpoints, in the master's own storage."""
    config = textwrap.dedent(
        """
        name: victim
        entrypoint: python3 train.py
        searcher: {name: single, metric: loss, max_length: {batches: 2}}
        max_restarts: 0
        """
    )
    return c.wait_state(c.submit(config, CONTEXTS / "files_out"), "COMPLETED", "ERROR")


def _config(storage: dict[str, str], **hparams: object) -> str:
    return yaml.safe_dump(
        {
            "name": "reach",
            "entrypoint": "python3 train.py",
            "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 1}},
            "max_restarts": 0,
            "checkpoint_storage": {"type": "shared_fs", **storage},
            "hyperparameters": hparams,
        }
    )


def _refusal(client: Client, config: str, context: Path) -> InvalidConfig:
    from assay.context import pack_context

    with pytest.raises(InvalidConfig) as refused:
        client.create_experiment(config, pack_context(context).data)
    return refused.value


@pytest.mark.parametrize(
    ("where", "says"),
    [
        ("parent of home", "holds the master's home"),
        ("inside home", "is inside the master's home"),
        ("outside the roots", "not under a checkpoint storage root this master allows"),
    ],
)
def test_storage_beyond_the_admins_roots_or_near_the_masters_home_is_refused_at_submission(
    c: Cluster, mallory: Client, tmp_path: Path, where: str, says: str
) -> None:
    host_path = {
        "parent of home": c.home.parent,
        "inside home": c.home / "run",
        "outside the roots": tmp_path / "elsewhere",
    }[where]
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "train.py").write_text("print('never runs')\n")
    refused = _refusal(mallory, _config({"host_path": str(host_path)}), tmp_path / "code")
    (detail,) = refused.details
    assert detail.path == "checkpoint_storage.host_path"
    assert says in detail.message and str(host_path) in detail.message
    # Nothing was created.
    assert all(e.name != "reach" for e in mallory.list_experiments().experiments)


def test_a_trial_cannot_make_the_master_serve_or_delete_its_own_files(
    c: Cluster, mallory: Client, victim: rest.Experiment, tmp_path: Path
) -> None:
    (their_checkpoint, *_) = c.client.experiment_checkpoints(victim.id)
    base = c.home.parent / "shared" / "mallory"
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "train.py").write_text(HOSTILE)
    config = _config(
        {"host_path": str(base)},
        base=str(base),
        home=str(c.home),
        victim=their_checkpoint.uuid,
        victim_exp=victim.id,
    )
    from assay.context import pack_context

    exp = mallory.create_experiment(config, pack_context(tmp_path / "code").data)
    assert c.wait_state(exp.id, "COMPLETED", "ERROR").state == "COMPLETED"
    (trial,) = c.client.trials(exp.id)
    (line,) = [x for x in c.trial_logs(trial.id) if x.startswith("HOSTILE ")]
    seen = json.loads(line.removeprefix("HOSTILE "))
    # A plain name is no checkpoint id; a UUID is registered (the master cannot see the
    # trial's storage), but what it names is then never followed nor sent.
    assert seen["plain"] == 400
    assert (seen["as_link"], seen["with_hardlink"]) == (200, 200)
    # Another user's experiment is out of a trial token's reach; its own is not.
    assert (seen["theirs"], seen["their_files"], seen["their_best"]) == (403, 403, 403)
    # Nor is it ever a user's token: known, and refused.
    assert (seen["their_exp"], seen["their_kill"]) == (403, 403)
    assert seen["own_best"] == 200

    headers = {"Authorization": f"Bearer {mallory.http.token}"}
    with httpx.Client(base_url=c.url, headers=headers, timeout=30) as http:
        linked, hard = seen["linked"], seen["hard"]
        answer = http.get(f"/api/v1/checkpoints/{linked}/files")
        assert answer.status_code == 409 and "is a link" in answer.json()["error"]["message"]
        for path in ("", "?path=weights.bin"):
            answer = http.get(f"/api/v1/checkpoints/{hard}/files{path}")
            assert answer.status_code == 403, answer.text
            assert "master's own files" in answer.json()["error"]["message"]
        # Deleting the linked one leaves the master's home as it was.
        before = sorted(p.name for p in c.home.iterdir())
        answer = http.delete(f"/api/v1/checkpoints/{linked}")
        assert answer.status_code == 409, answer.text
        assert sorted(p.name for p in c.home.iterdir()) == before
        assert (c.home / "assay.db").is_file()
        # The master still answers: its database was neither served nor deleted.
        assert http.get("/api/v1/experiments").status_code == 200
