"""Security probes against a live master, as a user who is not an admin:

1. a second user's trial cannot make the master serve the master's own files (storage near its
   home refused at submission, a plain-name checkpoint id refused, a link or hard link in a
   checkpoint not served);
2. a trial's token gets 403 on another user's checkpoint and experiment;
3. the master sends nothing to a user-chosen s3 endpoint at submission (a stand-in server on
   loopback records every request), let alone with the AWS credentials in its environment;
4. ``assay up`` after ``assay down`` comes back on the port the first ``up`` was given."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import yaml

from benchmarks.reliability._cluster import (
    TRACKER,
    Cluster,
    free_port,
    listens_on,
    running,
    wait_for,
)
from benchmarks.reliability._report import Part, context, mark

MASTER_KEY = "AKIARELIABILITYMASTER"
"""The access key id in the master's environment (its ambient credentials)."""


def _config(name: str, storage: dict[str, Any], hparams: dict[str, Any] | None = None) -> str:
    return yaml.safe_dump(
        {
            "name": name,
            "entrypoint": "python3 train.py",
            "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 1}},
            "max_restarts": 0,
            "checkpoint_storage": storage,
            "hyperparameters": hparams or {},
        }
    )


class Recorder(BaseHTTPRequestHandler):
    """A stand-in object store: records every request (method, path, Authorization) and
    refuses it as S3 would."""

    seen: list[tuple[str, str, str]] = []
    lock = threading.Lock()

    def _record(self) -> None:
        with self.lock:
            self.seen.append((self.command, self.path, self.headers.get("Authorization") or ""))
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        body = b"<Error><Code>AccessDenied</Code><Message>stand-in</Message></Error>"
        self.send_response(403)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _record  # noqa: N815 (http.server's names)

    def log_message(self, *args: object) -> None:
        pass


@contextlib.contextmanager
def stand_in() -> Iterator[tuple[str, type[Recorder]]]:
    class Handler(Recorder):
        seen: list[tuple[str, str, str]] = []  # one list per stand-in

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", Handler
    finally:
        server.shutdown()
        server.server_close()


def reach(part: Part, cluster: Cluster, table: list[str]) -> None:
    """Probes 1 and 2 with a hostile trial of user mallory."""
    mallory = cluster.add_user("mallory")
    shared = cluster.root / "shared"
    code = context("hostile")
    # The admin's experiment with checkpoints, in the master's own storage.
    victim_config = yaml.safe_dump(
        {
            "name": "victim",
            "entrypoint": "python3 train.py",
            "hyperparameters": {"ledger": str(cluster.root / "victim"), "step_seconds": 0.01},
            "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 3}},
            "max_restarts": 0,
        }
    )
    victim_exp = cluster.create(victim_config, context())
    state = cluster.wait_ended(victim_exp, 300)
    victim = cluster.checkpoints(victim_exp)
    if state != "COMPLETED" or not victim:
        part.fail(f"probe 1: the admin's experiment ended {state} with {len(victim)} checkpoints")
        return
    for where, path in [
        ("holding the master's home (its parent)", cluster.home.parent),
        ("at the master's home itself", cluster.home),
        ("inside the master's home (run/)", cluster.home / "run"),
        ("outside the admin's roots", cluster.root / "elsewhere"),
    ]:
        config = _config("reach", {"type": "shared_fs", "host_path": str(path)})
        answer = cluster.submit(config, code, token=mallory, activate=False)
        refused = 400 <= answer.status_code < 500
        table.append(
            f"| 1 | storage {where} refused at submission | {answer.status_code} | "
            f"{mark(refused)} |"
        )
        part.check(refused, f"probe 1: storage {where} accepted ({answer.status_code})")
    out = cluster.root / "hostile-trial.json"
    config = _config(
        "reach",
        {"type": "shared_fs", "host_path": str(shared / "mallory")},
        {
            "base": str(shared / "mallory"),
            "home": str(cluster.home),
            "victim": victim[0]["uuid"],
            "victim_exp": victim_exp,
            "out": str(out),
        },
    )
    answer = cluster.submit(config, code, token=mallory)
    if not answer.is_success:
        part.fail(f"probe 1: the hostile trial's experiment was refused: {answer.text[:300]}")
        return
    state = cluster.wait_ended(int(answer.json()["id"]), 300)
    if not out.exists():
        part.fail(f"probe 1: the hostile trial reported nothing (experiment {state})")
        return
    seen = json.loads(out.read_text())
    table.append(
        f"| 1 | a plain-name checkpoint id refused when a trial registers it | {seen['plain']} | "
        f"{mark(seen['plain'] == 400)} |"
    )
    part.check(seen["plain"] == 400, f"probe 1: plain-name checkpoint id answered {seen['plain']}")
    home_before = sorted(p.name for p in cluster.home.iterdir())
    with httpx.Client(
        base_url=cluster.url, headers={"Authorization": f"Bearer {mallory}"}, timeout=60
    ) as http:
        for what, where in [
            ("a checkpoint that is a link to the master's home", f"{seen['linked']}/files"),
            ("that link, a file inside it", f"{seen['linked']}/files?path=assay.db"),
            ("a checkpoint holding a hard link to the master's database", f"{seen['hard']}/files"),
            ("that hard link itself", f"{seen['hard']}/files?path=weights.bin"),
        ]:
            got = http.get(f"/api/v1/checkpoints/{where}")
            served = got.status_code == 200 or b"SQLite format 3" in got.content
            table.append(
                f"| 1 | {what}: not served (registered: {seen['as_link']}, "
                f"{seen['with_hardlink']}) | {got.status_code} | {mark(not served)} |"
            )
            part.check(not served, f"probe 1: {what} served ({got.status_code})")
        deleted = http.delete(f"/api/v1/checkpoints/{seen['linked']}")
        kept = sorted(p.name for p in cluster.home.iterdir()) == home_before
        kept = kept and (cluster.home / "assay.db").is_file()
        table.append(
            f"| 1 | deleting the linked checkpoint leaves the master's home as it was | "
            f"{deleted.status_code} | {mark(kept)} |"
        )
        part.check(kept, "probe 1: deleting the linked checkpoint changed the master's home")
    for key in (
        "their checkpoint",
        "their checkpoint's files",
        "their experiment",
        "their experiment's checkpoints",
        "their best validation",
        "their experiment killed",
    ):
        # 403: refused as the trial's; 401: a route no trial token may use, refused as no
        # user's credential. Both refuse; anything else does not.
        status = seen[key]
        verdict = mark(status in (401, 403)) + (" (401, not 403)" if status == 401 else "")
        table.append(f"| 2 | a trial's token on another user's: {key} | {status} | {verdict} |")
        part.check(status in (401, 403), f"probe 2: a trial's token on {key} answered {status}")
    own = seen["own best validation"]
    table.append(
        f"| 2 | (control) its own experiment's best validation | {own} | {mark(own == 200)} |"
    )
    part.check(own == 200, f"probe 2: the trial's own experiment answered {own}")


def endpoint(part: Part, cluster: Cluster, table: list[str]) -> None:
    """Probe 3: s3 storage on a server the submitter chose."""
    token = cluster.add_user("eve")
    with stand_in() as (url, recorder):
        submissions = {
            "s3 storage, no keys (the master's own would sign)": {
                "type": "s3", "bucket": "experiments", "endpoint_url": url,
            },
            "s3 storage with the submitter's keys": {
                "type": "s3", "bucket": "experiments", "endpoint_url": url,
                "access_key": "SUBMITTERSKEY", "secret_key": "submitters-secret",
            },
            "azure storage at that server": {
                "type": "azure", "container": "experiments", "account_url": url,
            },
        }  # fmt: skip
        answers = []
        for name, storage in submissions.items():
            config = _config("endpoint", storage)
            created = cluster.submit(config, context(), token=token, activate=False)
            validated = cluster.http.post(
                "/api/v1/experiments/validate",
                files={"config": (None, config)},
                headers={"Authorization": f"Bearer {token}"},
            )
            answers.append(f"{name}: {created.status_code}/{validated.status_code}")
        time.sleep(3.0)  # anything sent in the background arrives meanwhile
        seen = list(recorder.seen)
    signed = [auth for _, _, auth in seen if MASTER_KEY in auth]
    table.append(
        f"| 3 | requests the stand-in endpoint received at submission and validation "
        f"({'; '.join(answers)}) | {len(seen)} | {mark(not seen)} |"
    )
    table.append(
        f"| 3 | of them signed with the master's own AWS key | {len(signed)} | {mark(not signed)} |"
    )
    part.check(not seen, f"probe 3: the master sent {len(seen)} request(s) to the endpoint")
    part.check(not signed, f"probe 3: {len(signed)} request(s) carried the master's AWS key")


def up_down_up(part: Part, table: list[str]) -> None:
    """Probe 4: `assay up --port P`, `assay down`, `assay up`: where does it listen?"""
    root = TRACKER.tempdir("assay-reliability-up-")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    env |= {
        "ASSAY_HOME": str(root / "home"),
        "XDG_CONFIG_HOME": str(root / "config"),
        "COLUMNS": "160",
    }
    run_dir = root / "home" / "run"

    def assay(*args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, "-c", "from assay.cli import main; main()", *args],
            env=env, capture_output=True, text=True, timeout=240, check=False,
        )  # fmt: skip
        for name in ("master", "agent"):
            with contextlib.suppress(OSError, ValueError):
                TRACKER.adopt(int((run_dir / f"{name}.pid").read_text()))
        return done

    port = free_port()
    came_back = "-"
    try:
        first = assay("up", "--port", str(port), "--slots", "1")
        if first.returncode != 0:
            part.fail(f"probe 4: assay up --port {port} failed: {first.stderr.strip()[-300:]}")
            return
        down = assay("down", "--grace", "5")
        part.check(
            down.returncode == 0, f"probe 4: assay down failed: {down.stderr.strip()[-300:]}"
        )
        again = assay("up")
        if again.returncode != 0:
            part.fail(f"probe 4: the second assay up failed: {again.stderr.strip()[-300:]}")
            return
        pid = int((run_dir / "master.pid").read_text())
        wait_for("the master to listen", lambda: listens_on(pid, port) or _ports(pid), 30)
        ports = _ports(pid)
        came_back = ", ".join(str(p) for p in ports) or "nothing"
        ok = ports == [port]
        table.append(
            f"| 4 | `assay up --port {port}`, `assay down`, `assay up`: listens on | "
            f"{came_back} | {mark(ok)} |"
        )
        part.check(ok, f"probe 4: assay up came back on {came_back}, not {port}")
    finally:
        # What `assay down` leaves running the tracker ends (by pid) when the run ends.
        assay("down", "--grace", "5")


def _ports(pid: int) -> list[int]:
    """The TCP ports ``pid`` listens on (from /proc)."""
    inodes = set()
    with contextlib.suppress(OSError):
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            with contextlib.suppress(OSError):
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    inodes.add(target[len("socket:[") : -1])
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                if fields[3] == "0A" and fields[9] in inodes:
                    found.add(int(fields[1].rsplit(":", 1)[1], 16))
    return sorted(found)


def run(part: Part, *, quick: bool) -> None:
    part.add(
        "A master started with `AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY` in its environment "
        "(its agent without), `allowed_checkpoint_storage` one shared directory; users "
        "`mallory` and `eve`, not admins. Probe 1 and 2 are played by a real trial of "
        "mallory's with its own allocation token (`contexts/hostile/train.py`), against a "
        "completed experiment of the admin's. Probe 3's endpoint is a stand-in HTTP server on "
        "loopback that records every request. Probe 4 runs `assay` with an `ASSAY_HOME` and "
        "`XDG_CONFIG_HOME` of its own.\n"
    )
    table = ["| probe | what | answer | verdict |", "|---|---|---|---|"]
    cluster = Cluster("probes")
    (cluster.root / "shared").mkdir()
    cluster.settings["allowed_checkpoint_storage"] = {"host_paths": [str(cluster.root / "shared")]}
    with running(cluster):
        cluster.start_master(
            env={"AWS_ACCESS_KEY_ID": MASTER_KEY, "AWS_SECRET_ACCESS_KEY": "the-masters-secret"}
        )
        cluster.start_agent("agent-1", slots=1)
        reach(part, cluster, table)
        endpoint(part, cluster, table)
    up_down_up(part, table)
    for line in table:
        part.add(line)
