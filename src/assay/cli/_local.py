"""``assay experiment create --local [--test-mode]``: an experiment run without a cluster.

It runs on a throw-away cluster of this machine: the real master (``python -m assay.api``) with
a temporary home and SQLite database on a loopback port, and one real agent, both torn down
with their home when the command ends (a whole search's checkpoints excepted: they go to the
config's storage, else to ``ASSAY_HOME/local-checkpoints``). Separate processes rather than a
master embedded in this one because that is the code path the cluster takes, so what passes
here passes there: the context is packed, uploaded and unpacked as it would be (ignore files
honoured), the trial gets the same environment, shims and harness, and a crash or hang of the
trial cannot take the command down with it. The cost is a second or two to start the master.
"""

from __future__ import annotations

import contextlib
import json
import os
import posixpath
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from assay.cli._common import (
    console,
    err_console,
    fail,
    fmt_hparams,
    fmt_metric,
    styled_state,
)
from assay.cli._home import assay_home
from assay.errors import AssayError
from assay.ports import free_port

ASSAY_PACKAGE = Path(__file__).resolve().parents[1]
"""assay's own package: frames of its files (the shims' too) are assay's, not the user's."""

if TYPE_CHECKING:
    from assay import rest
    from assay.client import Client
    from assay.config import ExperimentConfig
    from assay.context import PackedContext

STARTUP_TIMEOUT = 60.0
STOP_GRACE = 20.0
AGENT_ID = "local"
LOCAL_POOL = "default"
LOCAL_CHECKPOINTS = "local-checkpoints"
"""Under ``ASSAY_HOME``: where ``--local`` keeps the checkpoints of a config naming no storage."""


class LocalCluster:
    """A master and one agent on loopback in a temporary home, as a context manager.

    ``storage``: where the master keeps the checkpoints of experiments that name no storage
    of their own; None, a directory in the temporary home (removed with it). ``allowed``: the
    file-system checkpoint storage the experiment names, which this master of the user's own
    then allows (``allowed_checkpoint_storage``), with test mode's ``checkpoints``."""

    def __init__(
        self, slots: int, storage: Path | None = None, allowed: tuple[Path, ...] = ()
    ) -> None:
        self.slots = slots
        self.storage = storage
        self.allowed = allowed
        self.root = Path(tempfile.mkdtemp(prefix="assay-local-"))
        self.home = self.root / "home"
        self.checkpoints = self.root / "checkpoints"
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.procs: list[tuple[str, subprocess.Popen[bytes]]] = []
        password = secrets.token_urlsafe(18)
        self.env = {
            **os.environ,
            "ASSAY_HOME": str(self.home),
            "ASSAY_ADMIN_PASSWORD": password,
            # Only the agent started here may join this master.
            "ASSAY_AGENT_TOKEN": secrets.token_urlsafe(24),
            "PYTHONUNBUFFERED": "1",
        }
        for name in ("ASSAY_MASTER", "ASSAY_USER_TOKEN"):
            self.env.pop(name, None)
        self._password = password
        self.client: Client | None = None

    def __enter__(self) -> LocalCluster:
        try:
            self._start()
            return self
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _spawn(self, name: str, args: list[str]) -> subprocess.Popen[bytes]:
        logs = self.home / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        with (logs / f"{name}.log").open("ab") as log:
            proc = subprocess.Popen(
                args,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                # Its own session: a Ctrl-C of this command reaches us, and we stop it in order.
                start_new_session=True,
            )
        self.procs.append((name, proc))
        return proc

    def _start(self) -> None:
        from assay.client import Client

        self.home.mkdir(mode=0o700, parents=True)
        self.checkpoints.mkdir()
        master_args = [
            sys.executable, "-m", "assay.api", "--host", "127.0.0.1", "--port", str(self.port),
            "--home", str(self.home),
        ]  # fmt: skip
        settings: dict[str, Any] = {
            "allowed_checkpoint_storage": {
                "host_paths": [str(p) for p in (self.checkpoints, *self.allowed)]
            }
        }
        if self.storage is not None:
            self.storage.mkdir(mode=0o700, parents=True, exist_ok=True)
            settings["checkpoint_storage"] = {"type": "shared_fs", "host_path": str(self.storage)}
        master_yaml = self.home / "master.yaml"
        # JSON is YAML: no quoting of the path to get wrong.
        master_yaml.write_text(json.dumps(settings))
        master_args += ["--config", str(master_yaml)]
        master = self._spawn("master", master_args)
        client = Client(self.url, timeout=30)
        # Not a token kept for some earlier master on this port, nor $ASSAY_USER_TOKEN: this
        # master's admin signs in below.
        client.http.token = None
        client.http.token_source = None
        self._wait(master, "master", lambda: bool(client.info()))
        client.login("admin", self._password)
        self.client = client
        agent = self._spawn(
            "agent",
            [sys.executable, "-m", "assay.agent", "--master", self.url, "--home", str(self.home),
             "--id", AGENT_ID, "--slots", str(self.slots), "--kill-grace", "5",
             "--pool", LOCAL_POOL],
        )  # fmt: skip
        self._wait(agent, "agent", lambda: any(a.connected for a in client.agents()))

    def _wait(self, proc: subprocess.Popen[bytes], name: str, ready: Any) -> None:
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                fail(f"the local {name} exited with code {proc.returncode}:\n{self.tail(name)}")
            with contextlib.suppress(AssayError):
                if ready():
                    return
            time.sleep(0.1)
        fail(f"the local {name} did not start within {STARTUP_TIMEOUT:.0f}s:\n{self.tail(name)}")

    def connected(self) -> Client:
        """The client signed in to this cluster as its admin."""
        assert self.client is not None, "the cluster is not started"
        return self.client

    def tail(self, name: str, lines: int = 20) -> str:
        try:
            text = (self.home / "logs" / f"{name}.log").read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def stop(self) -> None:
        """The agent first, so that its trials end cleanly, then the master; then the home."""
        # A second Ctrl-C must not cut the teardown short and leave processes behind.
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            if self.client is not None:
                self.client.close()
            for _, proc in reversed(self.procs):
                if proc.poll() is None:
                    proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=STOP_GRACE)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            self.procs.clear()
            shutil.rmtree(self.root, ignore_errors=True)
        finally:
            signal.signal(signal.SIGINT, previous)


def agent_slots() -> int:
    """CPU slots for the local agent (used when the machine has no GPU): one per core. Never
    more, whatever the config asks: a trial of more slots than cores would oversubscribe them,
    so it is refused instead (:func:`slots_problem`)."""
    return os.cpu_count() or 1


def slots_problem(wanted: int, slots: list[rest.AgentSlot]) -> str | None:
    """Why a trial of ``wanted`` slots cannot run on the local agent's ``slots``, in one line."""
    if wanted <= len(slots):
        return None
    gpus = any(s.type != "cpu" for s in slots)
    kind = "GPU" if gpus else "CPU core"
    return (
        f"resources.slots_per_trial is {wanted}, but --local offers {len(slots)} slot(s) on this "
        f"machine (one per {kind}); run it locally with --config "
        f"resources.slots_per_trial={len(slots)}"
    )


def run_local(
    config_file: Path, context_dir: Path | None, overrides: tuple[str, ...], test_mode: bool
) -> None:
    """Run the experiment of ``config_file`` (assay's, Determined's or NNI's) on a throw-away
    local cluster; exit non-zero when it (or, in test mode, the code) fails. ``context_dir``
    defaults to the directory an NNI config names."""
    from assay.cli._config_read import read_experiment_config
    from assay.config import apply_overrides, load_experiment_config
    from assay.context import pack_context

    read = read_experiment_config(config_file)
    context_dir = context_dir or read.context
    if context_dir is None:
        fail("give the context directory (the directory with the training code) after the config")
    text, raw = read.text, read.raw
    for note in read.notes:
        err_console.print(f"note: {note}", highlight=False, soft_wrap=True)
    # Every problem of the config and the context is found before anything starts.
    cfg = load_experiment_config(raw, overrides=overrides)
    packed = pack_context(context_dir)
    pool = cfg.resources.resource_pool
    if pool and pool != LOCAL_POOL:
        # The cluster's pools do not exist here; this machine is the one pool.
        console.print(
            f"[dim]local: resources.resource_pool {pool!r} runs in this machine's pool[/]"
        )
        overrides = (*overrides, f"resources.resource_pool={LOCAL_POOL}")
    submission = Submission(
        text,
        apply_overrides(raw, overrides),
        cfg,
        packed,
        overrides,
        tuple(read.notes),
        context_dir,
    )
    # A whole search keeps its checkpoints past the command (the throw-away cluster's home is
    # removed): the config's storage, else LOCAL_CHECKPOINTS. Test mode writes to neither.
    storage = None if test_mode else assay_home() / LOCAL_CHECKPOINTS
    try:
        with LocalCluster(agent_slots(), storage, _own_storage(cfg)) as local:
            _run_on(local, submission, test_mode)
    except KeyboardInterrupt:
        # The cluster is gone by now (its processes stopped, its files removed).
        fail("interrupted; the local cluster was stopped", code=130)


def _own_storage(cfg: ExperimentConfig) -> tuple[Path, ...]:
    """The directory of the config's own file-system checkpoint storage, if it names one (the
    master checks and refuses a bad one with its reason)."""
    storage = cfg.checkpoint_storage
    kind = getattr(getattr(storage, "type", None), "value", getattr(storage, "type", None))
    if kind == "shared_fs":
        host, sub = getattr(storage, "host_path", None), getattr(storage, "storage_path", None)
        if isinstance(host, str) and posixpath.isabs(host):
            return (Path(posixpath.normpath(posixpath.join(host, sub or ""))),)
    if kind == "directory":
        path = getattr(storage, "container_path", None)
        if isinstance(path, str) and posixpath.isabs(path):
            return (Path(posixpath.normpath(path)),)
    return ()  # none, only GC keys (the cluster's own storage), or an object store


@dataclass(frozen=True)
class Submission:
    text: str
    raw: dict[str, Any]
    """The config with the overrides applied."""
    cfg: ExperimentConfig
    packed: PackedContext
    overrides: tuple[str, ...]
    notes: tuple[str, ...]
    """For the experiment's log: what reading the config accepted with a caveat."""
    context: Path
    """The context directory as the user named it: a traceback's paths are shown in it."""


def _run_on(local: LocalCluster, sub: Submission, test_mode: bool) -> None:
    import yaml

    from assay.context import format_size

    client = local.connected()
    # What the agent offers (its cores, or the machine's GPUs), checked before anything is
    # submitted; leaving the block stops the cluster.
    slots = [s for a in client.agents() if a.connected for s in a.slots]
    problem = slots_problem(sub.cfg.resources.slots_per_trial, slots)
    if problem:
        fail(problem)
    if test_mode:
        from assay.cli._testmode import compressed_config

        compressed = compressed_config(sub.raw, sub.cfg, str(local.checkpoints))
        for note in compressed.notes:
            console.print(f"[dim]test mode: {note}[/]")
        submitted = yaml.safe_dump(compressed.raw, sort_keys=False)
        exp = client.create_experiment(submitted, sub.packed.data, notes=list(sub.notes))
    else:
        exp = client.create_experiment(
            sub.text, sub.packed.data, overrides=sub.overrides, notes=list(sub.notes)
        )
    console.print(
        f"local {'test-mode ' if test_mode else ''}experiment from {sub.packed.files} files "
        f"({format_size(sub.packed.size)}) on a throw-away cluster (master {client.url})"
    )
    if test_mode:
        _run_test_mode(client, exp, local, sub.context)
    else:
        _run_search(client, exp)


def _run_search(client: Client, exp: rest.Experiment) -> None:
    from assay.cli._follow import follow_experiment, print_outcome
    from assay.protocol import ExperimentState

    final = follow_experiment(client, exp.id)
    print_outcome(client, final)
    if final.state != ExperimentState.COMPLETED:
        raise typer.Exit(1)


def _run_test_mode(
    client: Client, exp: rest.Experiment, local: LocalCluster, context: Path
) -> None:
    from rich.text import Text

    from assay.cli._testmode import judge, traceback_of, user_traceback
    from assay.protocol import ExperimentState, TrialState

    seen: dict[int, int] = {}
    lines: list[str] = []
    final = exp
    last_pass = False
    while True:
        trials = client.trials(exp.id)
        for t in trials:
            page = client.logs(t.id, after=seen.get(t.id, 0))
            for entry in page:
                console.print(Text(f"[trial {t.id}] ", style="dim") + Text(entry.line))
                lines.append(entry.line)
            if page:
                seen[t.id] = page[-1].id
        if last_pass:
            break
        final = client.experiment(exp.id)
        # One more pass after the end: lines stored just before it still show.
        last_pass = final.state.terminal
        if not last_pass:
            client.wait(exp.id, 0.5)
    trial = trials[0] if trials else None
    metrics = client.metrics(trial.id) if trial else []
    checkpoints = client.trial_checkpoints(trial.id) if trial else []
    if trial is not None:
        console.print(f"hyperparameters: {fmt_hparams(trial.hparams, limit=400)}")
    _print_metrics(metrics)
    for ck in checkpoints:
        console.print(f"checkpoint {ck.uuid} at step {ck.steps_completed}")
    completed = (
        final.state == ExperimentState.COMPLETED
        and trial is not None
        and trial.state == TrialState.COMPLETED
    )
    verdict = judge(
        trial.state if trial else None,
        completed,
        metrics,
        len(checkpoints),
        final.searcher.metric or "",
    )
    for warning in verdict.warnings:
        err_console.print(f"[bold yellow]warning:[/] {warning}", highlight=False, soft_wrap=True)
    if verdict.ok:
        console.print(f"test mode passed: experiment {styled_state(final.state)}")
        return
    tb = user_traceback(
        traceback_of(lines),
        # Where the local agent (its work root is under the cluster's home) unpacks the code.
        ran_in=re.compile(re.escape(str(local.home)) + r"/agents/[^/]+/allocations/[^/]+/code/"),
        code_dir=context,
        internal=[str(ASSAY_PACKAGE) + os.sep],
    )
    if tb:
        err_console.print("the trial's traceback:", highlight=False)
        for line in tb:
            err_console.print(f"  {line}", highlight=False, markup=False, soft_wrap=True)
    elif final.message:
        err_console.print(final.message, highlight=False, markup=False, soft_wrap=True)
    fail("test mode failed: " + "; ".join(verdict.problems))


def _print_metrics(metrics: list[rest.Metric]) -> None:
    if not metrics:
        console.print("no metrics were reported")
        return
    console.print("metrics reported:")
    for m in metrics:
        values = ", ".join(f"{k}={fmt_metric(v)}" for k, v in m.metrics.items())
        console.print(f"  {m.group:<10} step {m.steps_completed:>6}  {values}", highlight=False)
