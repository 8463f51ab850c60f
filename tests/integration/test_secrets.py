"""Secret environment variables on a real cluster: the trial gets the value, while no API
answer, CLI output or stored log line shows it."""

from __future__ import annotations

import hashlib
import textwrap

import httpx
import pytest

from assay.config import MASK
from tests.integration.cluster import CONTEXTS, Cluster

pytestmark = pytest.mark.integration

# Regex metacharacters, so a pattern built without escaping would not match it.
SECRET = "s3cr3t.*+?(tok)[en]$"

CONFIG = textwrap.dedent(
    f"""
    # The service token is {SECRET}; never show it.
    name: 'secrets for {SECRET}'
    description: 'calls the service with {SECRET}'
    entrypoint: python3 train.py
    searcher: {{name: single, metric: loss, max_length: {{batches: 1}}}}
    environment:
      environment_variables:
        - PLAIN=visible
        - name: API_TOKEN
          value: '{SECRET}'
          secret: true
    """
)


def test_secret_variable_reaches_the_trial_but_no_answer_or_log_shows_it(
    cluster: Cluster,
) -> None:
    exp_id = cluster.submit(CONFIG, CONTEXTS / "secret_env")
    exp = cluster.wait_state(exp_id, "COMPLETED", "ERROR")
    assert exp.state == "COMPLETED", exp.message
    (trial,) = cluster.client.trials(exp_id)

    # The trial saw the real value, in its environment and in the config it was given.
    lines = cluster.trial_logs(trial.id)
    digest = hashlib.sha256(SECRET.encode()).hexdigest()
    assert f"token length {len(SECRET)} sha256 {digest}" in lines
    assert "config holds the same value: True" in lines
    # What it printed of it was masked before it was stored.
    assert f"connecting with token {MASK} to the service" in lines
    assert f"token={MASK}" in lines
    assert not any(SECRET in line for line in lines)

    shown = cluster.client.experiment(exp_id)
    entries = shown.config["environment"]["environment_variables"]["cpu"]
    assert entries == ["PLAIN=visible", {"name": "API_TOKEN", "value": MASK, "secret": True}]
    assert f"The service token is {MASK};" in shown.original_config
    assert f'value: "{MASK}"' in shown.original_config

    with httpx.Client(base_url=cluster.url, headers=cluster.auth_headers()) as http:
        for path in (
            f"/api/v1/experiments/{exp_id}",
            "/api/v1/experiments",
            f"/api/v1/experiments/{exp_id}/trials",
            f"/api/v1/trials/{trial.id}",
            f"/api/v1/trials/{trial.id}/logs",
            f"/api/v1/trials/{trial.id}/metrics",
        ):
            answer = http.get(path)
            assert answer.status_code == 200, (path, answer.text)
            assert SECRET not in answer.text and "s3cr3t" not in answer.text, path

    assert shown.name == f"secrets for {MASK}"
    assert shown.description == f"calls the service with {MASK}"

    outputs = [
        cluster.cli(*command, check=True)
        for command in (
            ("experiment", "config", str(exp_id)),
            ("experiment", "describe", str(exp_id), "--json"),
            ("experiment", "describe", str(exp_id)),
            ("experiment", "list"),
            ("trial", "logs", str(trial.id)),
        )
    ]
    for output in outputs:
        assert "s3cr3t" not in output.stdout + output.stderr
    logs = outputs[-1]
    assert MASK in logs.stdout
    assert "s3cr3t" not in cluster.log("master")
