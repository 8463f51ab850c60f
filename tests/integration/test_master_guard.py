"""A real master protects itself: forged browser requests, foreign Host names and foreign
WebSocket origins are refused; with a certificate it serves https to the CLI, agents and
trials."""

from __future__ import annotations

import asyncio
import json
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus
from websockets.typing import Origin

from tests.integration.cluster import CONTEXTS, ROOT, Cluster, serve, wait_for
from tests.unit.api.certs import ServerCert, make_server_cert

pytestmark = pytest.mark.integration

EVIL = "http://evil.example"


def long_counter() -> str:
    return yaml.safe_dump(
        {
            "name": "long",
            "entrypoint": "python3 train.py",
            "hyperparameters": {"step_seconds": 0.5, "checkpoint_every": 1000},
            "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 10_000}},
        }
    )


def test_the_forged_kill_is_refused_and_the_experiment_keeps_running(cluster: Cluster) -> None:
    exp = cluster.submit(long_counter())
    wait_for("its trial to run", lambda: _states(cluster, exp) == ["RUNNING"])
    forged = httpx.post(
        f"{cluster.url}/api/v1/experiments/{exp}/kill",
        headers={**cluster.auth_headers(), "Origin": EVIL, "Content-Type": "text/plain"},
        content=b"x",
        timeout=30,
    )
    assert forged.status_code == 403, forged.text
    assert forged.json()["error"]["type"] == "Forbidden"
    assert "Origin 'http://evil.example'" in forged.json()["error"]["message"]
    assert cluster.client.experiment(exp).state == "ACTIVE"
    assert _states(cluster, exp) == ["RUNNING"]

    own_page = httpx.post(
        f"{cluster.url}/api/v1/experiments/{exp}/kill",
        headers={**cluster.auth_headers(), "Origin": cluster.url},
        timeout=30,
    )
    assert own_page.status_code == 200, own_page.text
    cluster.wait_state(exp, "CANCELED")


def _states(cluster: Cluster, exp: int) -> list[str]:
    return [t.state.value for t in cluster.client.trials(exp)]


def test_a_foreign_host_name_is_refused_with_the_error_shape(cluster: Cluster) -> None:
    # DNS rebinding: the attacker's name resolves to the master, the browser sends that name.
    answer = httpx.get(
        f"{cluster.url}/api/v1/experiments",
        headers={**cluster.auth_headers(), "Host": f"evil.example:{cluster.port}"},
        timeout=30,
    )
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["type"] == "InvalidRequest"
    assert "'evil.example:" in error["message"] and "--allowed-host" in error["message"]
    named = httpx.get(
        f"http://localhost:{cluster.port}/api/v1/experiments",
        headers=cluster.auth_headers(),
        timeout=30,
    )
    assert named.status_code == 200


def test_the_agent_websocket_refuses_a_foreign_origin(cluster: Cluster) -> None:
    ws_url = cluster.url.replace("http", "ws") + "/api/v1/agents/ws"

    async def open_from(origin: str) -> dict[str, object]:
        headers = cluster.auth_headers()
        async with connect(ws_url, origin=Origin(origin), additional_headers=headers) as ws:
            await ws.send(json.dumps({"type": "hello", "agent_id": "x", "pool": "nope"}))
            return dict(json.loads(await ws.recv()))

    with pytest.raises(InvalidStatus) as denied:
        asyncio.run(open_from(EVIL))
    assert denied.value.response.status_code == 403
    assert b"Forbidden" in denied.value.response.body
    same_origin = asyncio.run(open_from(cluster.url))
    assert same_origin["type"] == "error", "the handshake passed: the hello was answered"
    assert any(a.id == "agent-1" and a.connected for a in cluster.client.agents())


@pytest.fixture
def tls(tmp_path: Path) -> ServerCert:
    return make_server_cert(tmp_path / "tls")


@pytest.fixture
def tls_cluster(
    tmp_path: Path, tls: ServerCert, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Cluster]:
    config = tmp_path / "master.yaml"
    config.write_text(yaml.safe_dump({"tls": {"cert": str(tls.cert), "key": str(tls.key)}}))
    monkeypatch.setenv("ASSAY_CA_CERT", str(tls.ca))
    cluster = Cluster(tmp_path / "home", master_config=config)
    cluster.url = f"https://127.0.0.1:{cluster.port}"
    cluster.client = type(cluster.client)(cluster.url, timeout=30)
    cluster.env.update(ASSAY_MASTER=cluster.url, ASSAY_CA_CERT=str(tls.ca))
    cluster.start_master()
    cluster.start_agent("agent-1", slots=1)
    yield from serve(cluster, request)


def test_a_master_with_a_certificate_serves_https_to_the_cli_agents_and_trials(
    tls_cluster: Cluster, tls: ServerCert, tmp_path: Path
) -> None:
    trusting = ssl.create_default_context(cafile=tls.ca)
    info = httpx.get(f"{tls_cluster.url}/api/v1/master", verify=trusting, timeout=30)
    assert info.status_code == 200 and info.json()["version"]
    with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        httpx.get(f"{tls_cluster.url}/api/v1/master", timeout=30)
    assert f"master on https://127.0.0.1:{tls_cluster.port}" in tls_cluster.log("master")

    config = tmp_path / "short.yaml"
    config.write_text(
        "entrypoint: python3 train.py\n"
        "hyperparameters: {step_seconds: 0.01}\n"
        "searcher: {name: single, metric: loss, max_length: {batches: 20}}\n"
    )
    created = tls_cluster.cli("e", "create", str(config), str(CONTEXTS / "counter"), "--json")
    assert created.returncode == 0, created.stderr
    exp = json.loads(created.stdout)["id"]
    waited = tls_cluster.cli("e", "wait", str(exp), timeout=180)
    assert waited.returncode == 0 and "COMPLETED" in waited.stdout, tls_cluster.log("agent-agent-1")

    untrusting = {k: v for k, v in tls_cluster.env.items() if k != "ASSAY_CA_CERT"}
    refused = run_cli(untrusting, "e", "list")
    assert refused.returncode != 0
    assert "TLS certificate is not trusted" in refused.stderr
    assert "ASSAY_CA_CERT" in refused.stderr and "Traceback" not in refused.stderr
    missing = run_cli({**untrusting, "ASSAY_CA_CERT": str(tmp_path / "no-ca.pem")}, "e", "list")
    assert missing.returncode != 0
    assert f"cannot use ASSAY_CA_CERT={tmp_path / 'no-ca.pem'}" in missing.stderr
    assert "Traceback" not in missing.stderr


def run_cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from assay.cli import main; main()", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        check=False,
    )
