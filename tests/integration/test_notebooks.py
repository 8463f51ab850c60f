"""Notebooks on a real cluster: JupyterLab started as a task on a real agent, reached through
the master's proxy by its owner only (HTTP and a kernel's WebSocket), ended by its idle timeout
or by a job of higher priority, and refused at start when its config is wrong."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml
from websockets.sync.client import connect

from assay import rest
from assay.client import Client
from assay.errors import AssayError
from tests.integration.cluster import Cluster, serve, task_port_base, wait_for
from tests.integration.interactive import notebook_answering

pytestmark = pytest.mark.integration

pytest.importorskip(
    "jupyterlab", reason="notebooks need jupyterlab (pip install 'assay[notebook]')"
)


@pytest.fixture(scope="module")
def cluster(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Cluster]:
    c = Cluster(tmp_path_factory.mktemp("notebooks") / "home")
    c.start_master()
    c.start_agent("agent-1", slots=1)
    yield from serve(c, request)


@pytest.fixture(scope="module")
def alice(cluster: Cluster) -> Client:
    return cluster.add_user("alice")


@pytest.fixture(scope="module")
def bob(cluster: Cluster) -> Client:
    return cluster.add_user("bob")


def _ended(client: Client, notebook_id: int, timeout: float = 60) -> rest.Notebook:
    return wait_for(
        f"notebook {notebook_id} to end",
        lambda: (b := client.notebook(notebook_id)).state.terminal and b,
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def zero_slot_notebook(alice: Client, tmp_path_factory: pytest.TempPathFactory) -> rest.Notebook:
    """Alice's notebook on no slot, started in a context directory with a file of hers."""
    from assay.context import pack_context

    code = tmp_path_factory.mktemp("notebook-context")
    (code / "hello.txt").write_text("hello from the context\n")
    book = alice.start_notebook(
        "description: alice's lab\n",
        context=pack_context(code).data,
        overrides=["resources.slots=0"],
    )
    return notebook_answering(alice, book.id)


def test_a_notebook_answers_its_owner_and_admins_through_the_proxy_and_refuses_others(
    cluster: Cluster, alice: Client, bob: Client, zero_slot_notebook: rest.Notebook
) -> None:
    book = zero_slot_notebook
    assert (book.name, book.slots, book.user, book.url) == (
        "alice's lab",
        0,
        "alice",
        f"/proxy/{book.id}/",
    )
    url = f"{cluster.url}{book.url}api/status"
    for who, client in (("alice", alice), ("admin", cluster.client)):
        answer = httpx.get(url, headers={"Authorization": f"Bearer {client.http.token}"})
        assert answer.status_code == 200, (who, answer.text)
        assert "started" in answer.json()
    refused = httpx.get(url, headers={"Authorization": f"Bearer {bob.http.token}"})
    assert refused.status_code == 403
    assert "belongs to alice" in refused.json()["error"]["message"]
    assert httpx.get(url).status_code == 401
    # JupyterLab listens on the port its agent reserved, from the master's task_port_base.
    (instance,) = cluster.client.task(book.id).instances
    assert instance.ports["http"][0] >= task_port_base()
    # The context directory is JupyterLab's working directory.
    contents = httpx.get(
        f"{cluster.url}{book.url}api/contents/hello.txt",
        headers={"Authorization": f"Bearer {alice.http.token}"},
    )
    assert contents.status_code == 200
    assert contents.json()["content"] == "hello from the context\n"


def test_a_browser_signs_in_once_with_a_one_time_link_and_the_token_stays_out_of_the_page(
    cluster: Cluster, alice: Client, zero_slot_notebook: rest.Notebook
) -> None:
    book = zero_slot_notebook
    link = alice.one_time_token().token
    with httpx.Client(base_url=cluster.url) as browser:
        first = browser.get(f"{book.url}lab?token={link}")
        assert first.status_code == 303
        assert first.headers["location"] == f"{book.url}lab"
        page = browser.get(f"{book.url}lab")
        assert page.status_code == 200
        assert "JupyterLab" in page.text
        # The link is spent: opening it again is refused.
        again = httpx.get(f"{cluster.url}{book.url}lab?token={link}")
        assert again.status_code == 401


def test_a_kernel_runs_code_through_the_proxy_over_its_websocket(
    cluster: Cluster, alice: Client, bob: Client, zero_slot_notebook: rest.Notebook
) -> None:
    book = zero_slot_notebook
    headers = {"Authorization": f"Bearer {alice.http.token}"}
    made = httpx.post(f"{cluster.url}{book.url}api/kernels", headers=headers, json={})
    assert made.status_code == 201, made.text
    kernel = made.json()["id"]
    socket_url = f"ws://127.0.0.1:{cluster.port}{book.url}api/kernels/{kernel}/channels"
    msg_id = uuid.uuid4().hex
    request = {
        "header": {
            "msg_id": msg_id,
            "username": "alice",
            "session": uuid.uuid4().hex,
            "msg_type": "execute_request",
            "version": "5.3",
        },
        "parent_header": {},
        "metadata": {},
        "content": {"code": "1+1", "silent": False},
        "channel": "shell",
    }
    result = None
    with connect(socket_url, additional_headers=headers, open_timeout=30) as ws:
        ws.send(json.dumps(request))
        while result is None:
            message = json.loads(ws.recv(timeout=60))
            if (
                message.get("parent_header", {}).get("msg_id") == msg_id
                and message["msg_type"] == "execute_result"
            ):
                result = message["content"]["data"]["text/plain"]
    assert result == "2"
    # Another user's handshake is refused before any message passes.
    with pytest.raises(Exception, match="403"):
        connect(socket_url, additional_headers={"Authorization": f"Bearer {bob.http.token}"})


def _browser(tmp_path: Path) -> tuple[str, Path]:
    """A ``BROWSER`` command (Python's webbrowser runs it) that writes the URL it is given to
    the file returned."""
    seen = tmp_path / "opened"
    script = tmp_path / "browser"
    script.write_text(f"#!/bin/sh\nprintf '%s' \"$1\" > {seen}\n")
    script.chmod(0o755)
    return f"{script} %s", seen


def test_notebook_open_gives_the_browser_a_one_time_link_into_jupyterlab(
    cluster: Cluster, zero_slot_notebook: rest.Notebook, tmp_path: Path
) -> None:
    book = zero_slot_notebook
    cluster.env["BROWSER"], seen = _browser(tmp_path)
    try:
        opened = cluster.cli("notebook", "open", str(book.id), check=True)
    finally:
        del cluster.env["BROWSER"]
    assert opened.stdout == f"{cluster.url}{book.url}\n"
    assert f"opened notebook {book.id} in a browser" in opened.stderr
    link = seen.read_text()
    assert link.startswith(f"{cluster.url}{book.url}?token=")
    # The link signs the browser in (the admin's, who ran the command) and lands in JupyterLab.
    with httpx.Client(follow_redirects=True) as browser:
        page = browser.get(link)
        assert page.status_code == 200
        assert "JupyterLab" in page.text
    # Spent: a second use is refused.
    assert httpx.get(link).status_code == 401


def test_notebook_start_no_browser_prints_the_url_and_opens_nothing(
    cluster: Cluster, tmp_path: Path
) -> None:
    cluster.env["BROWSER"], seen = _browser(tmp_path)
    try:
        started = cluster.cli(
            "notebook", "start", "--no-browser", "--config", "resources.slots=0", check=True
        )
    finally:
        del cluster.env["BROWSER"]
    # What it started, then its URL, the last line (for a script to take).
    url = started.stdout.strip().splitlines()[-1]
    assert url.startswith(f"{cluster.url}/proxy/") and url.endswith("/"), started.stdout
    assert not seen.exists()
    # It waited until JupyterLab answered through the proxy.
    status = httpx.get(f"{url}api/status", headers=cluster.auth_headers())
    assert status.status_code == 200, status.text
    book_id = url.rstrip("/").rsplit("/", 1)[1]
    cluster.cli("notebook", "kill", book_id, check=True)
    assert _ended(cluster.client, int(book_id)).state == "STOPPED"


def test_the_cli_lists_and_kills_a_notebook(
    cluster: Cluster, zero_slot_notebook: rest.Notebook
) -> None:
    listed = cluster.cli("notebook", "list", "--json", check=True)
    (row,) = [b for b in json.loads(listed.stdout) if b["id"] == zero_slot_notebook.id]
    assert row["url"] == f"{cluster.url}/proxy/{zero_slot_notebook.id}/"
    assert row["user"] == "alice"
    # It is a job like any other: in the queue and among the tasks.
    queue = json.loads(cluster.cli("job", "list", "--json", check=True).stdout)
    (job,) = [j for j in queue["jobs"] if j["task_id"] == zero_slot_notebook.id]
    assert (job["type"], job["user"], job["status"]) == ("NOTEBOOK", "alice", "RUNNING")
    tasks = json.loads(cluster.cli("task", "list", "--json", check=True).stdout)
    assert zero_slot_notebook.id in [t["id"] for t in tasks]
    killed = cluster.cli("notebook", "kill", str(zero_slot_notebook.id), check=True)
    assert "STOPP" in killed.stdout
    book = _ended(cluster.client, zero_slot_notebook.id)
    assert book.state == "STOPPED"
    gone = httpx.get(f"{cluster.url}{book.url}api/status", headers=cluster.auth_headers())
    assert gone.status_code == 503
    assert "has ended" in gone.json()["error"]["message"]


def test_an_idle_notebook_ends_by_itself_and_frees_its_slot(
    cluster: Cluster, alice: Client
) -> None:
    book = alice.start_notebook("idle_timeout: 3s\nnotebook_idle_type: kernels_or_terminals\n")
    assert (book.slots, book.idle_timeout, book.idle_type) == (1, 3.0, "kernels_or_terminals")
    notebook_answering(alice, book.id)
    assert [s.allocated for a in cluster.client.agents() for s in a.slots] == [True]
    ended = _ended(alice, book.id, timeout=90)
    assert ended.state == "SUCCEEDED"
    lines = [e.line for e in alice.task_logs(book.id)]
    assert any("has been idle (no kernel or terminal running)" in line for line in lines), lines
    # Why it ended is its launcher's word, not a count of instances.
    assert ended.message.startswith("the notebook has been idle"), ended.message
    wait_for(
        "the slot to be free",
        lambda: not any(s.allocated for a in cluster.client.agents() for s in a.slots),
    )


def test_a_higher_priority_experiment_preempts_a_notebook(
    cluster: Cluster, alice: Client, tmp_path: Path
) -> None:
    book = alice.start_notebook("resources:\n  priority: 60\n")
    notebook_answering(alice, book.id)
    config = {
        "name": "urgent",
        "entrypoint": "python3 train.py",
        "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 2}},
        "resources": {"slots_per_trial": 1, "priority": 1},
        "max_restarts": 0,
    }
    exp_id = cluster.submit(yaml.safe_dump(config))
    ended = _ended(alice, book.id, timeout=90)
    assert ended.state == "STOPPED"
    assert "preempted: a job of higher priority needed its slots" in ended.message
    assert cluster.wait_state(exp_id, "COMPLETED", "ERROR").state == "COMPLETED"


@pytest.mark.parametrize(
    ("config", "overrides", "says"),
    [
        ("notebook_idle_type: sometimes\n", [], "notebook_idle_type: must be one of"),
        (
            "idle_timeout: soon\n",
            [],
            "idle_timeout: must be a number of seconds, or a number followed by s",
        ),
        ("entrypoint: python3 x.py\n", [], "entrypoint: a notebook runs JupyterLab"),
        ("", ["resources.slots=9"], "slots"),
    ],
)
def test_a_wrong_notebook_config_is_refused_at_start_with_its_key(
    alice: Client, config: str, overrides: list[str], says: str
) -> None:
    before = len(alice.notebooks(all_=True))
    with pytest.raises(AssayError, match=says):
        alice.start_notebook(config, overrides=overrides)
    assert len(alice.notebooks(all_=True)) == before
