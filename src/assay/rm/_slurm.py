"""Slurm as a resource manager: each allocation a Slurm batch job on the node the master's
scheduler chose.

The job runs :mod:`assay.rm._step`, which runs the allocation as an agent would and appends
its events to ``events.jsonl`` in the allocation's directory under ``work_dir`` (a filesystem
the master and the nodes share). The master reads them from there, and ``squeue`` for jobs
that vanished without an exit (cancelled by an administrator, out of time, a failed node).
Everything about an allocation lives in its directory, so a master restarted at any moment
finds its jobs again: what still runs, what ended while it was away.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shlex
import shutil
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from assay.config import SlurmPoolConfig
from assay.errors import ResourceManagerError
from assay.files import write_private
from assay.protocol import AgentMessage, Exited, Hello, LogEntry, Logs, Slot, Start, Started
from assay.rm._protocol import Report
from assay.rm._step import event_line, read_events

log = logging.getLogger(__name__)

COMMAND_TIMEOUT = 60.0
NODES_EVERY = 30.0
"""Seconds between looks at the partition's nodes (a changed node is offered again)."""
JOB_PREFIX = "assay-"
ENDED_UNSEEN = (
    "the Slurm job ended without reporting an exit (cancelled outside assay, out of time, "
    "or its node failed)"
)
_EXPORTED = "PATH,HOME,USER,LANG,LC_ALL,TMPDIR"
"""The master's variables a job starts with (the rest of its environment is its own)."""


async def slurm(*argv: str) -> str:
    """Run a Slurm command; its stdout. Raises :class:`ResourceManagerError` with Slurm's own
    words when it fails or is not installed."""
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    except FileNotFoundError:
        raise ResourceManagerError(
            f"there is no {argv[0]} command on the master's PATH: a Slurm pool needs Slurm's "
            "client commands where the master runs"
        ) from None
    try:
        out, err = await asyncio.wait_for(proc.communicate(), COMMAND_TIMEOUT)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise ResourceManagerError(f"{argv[0]} did not answer in {COMMAND_TIMEOUT:.0f} s") from None
    if proc.returncode != 0:
        said = " ".join(err.decode(errors="replace").split()) or f"exit code {proc.returncode}"
        raise ResourceManagerError(f"{shlex.join(argv[:2])}... failed: {said}")
    return out.decode(errors="replace")


@dataclass(frozen=True)
class SlurmPool:
    """One ``type: slurm`` pool as the manager needs it."""

    name: str
    settings: SlurmPoolConfig
    work_dir: Path
    master_url: str
    agent_token: str


@dataclass
class _Job:
    """An allocation the manager holds, mirrored in its directory."""

    node: str
    dir: Path
    trial_id: int
    job_id: str = ""
    submitting: bool = False
    started: bool = False
    killed: bool = False
    kill_deadline: float | None = None
    exit: Exited | None = None
    offset: int = 0
    pending: bytes = b""
    extra: dict[str, Any] = field(default_factory=dict)


class SlurmManager:
    """The :class:`assay.rm.ResourceManager` of a Slurm partition."""

    def __init__(self, pool: SlurmPool) -> None:
        self.pool = pool
        self.settings = pool.settings
        self.jobs: dict[str, _Job] = {}
        self.killed_early: set[str] = set()
        self.nodes: dict[str, Hello] = {}
        self._report: Report | None = None
        self._poller: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def _jobs_dir(self) -> Path:
        return self.pool.work_dir / "jobs"

    def node_id(self, slurm_node: str) -> str:
        return f"{self.pool.name}.{slurm_node}"

    def _slurm_node(self, node: str) -> str:
        return node.removeprefix(f"{self.pool.name}.")

    # -- the protocol -----------------------------------------------------------------------------

    async def open(self, report: Report) -> list[Hello]:
        self._jobs_dir.mkdir(parents=True, exist_ok=True)
        await asyncio.to_thread(
            write_private, self.pool.work_dir / "agent-token", self.pool.agent_token
        )
        self.nodes = {h.agent_id: h for h in await self._offered_nodes()}
        queued = await self._queue()
        self.jobs = {}
        for path in sorted(self._jobs_dir.iterdir()):
            job = await asyncio.to_thread(self._load, path)
            if job is not None:
                self.jobs[path.name] = job
        for alloc_id, job in self.jobs.items():
            if job.exit is None:
                job.job_id = job.job_id or queued.get(alloc_id, "")
                if alloc_id not in queued:
                    # Ended while no master watched: its last events may be the exit.
                    self._read_new(alloc_id, job)
                    if job.exit is None:
                        await asyncio.to_thread(self._end_unseen, alloc_id, job)
        hellos = [self._hello(h) for h in self.nodes.values()]
        self._report = report
        if self._poller is None:
            self._poller = asyncio.create_task(self._poll())
        return hellos

    async def start(self, node: str, message: Start) -> None:
        alloc_id = message.allocation_id
        if alloc_id in self.jobs:
            return
        job = _Job(node=node, dir=self._jobs_dir / alloc_id, trial_id=message.trial_id)
        self.jobs[alloc_id] = job
        if alloc_id in self.killed_early:
            await asyncio.to_thread(job.dir.mkdir, parents=True, exist_ok=True)
            await self._end(alloc_id, job, None, "killed before it started")
            return
        job.submitting = True
        self._spawn(self._submit(alloc_id, job, message))

    async def kill(self, node: str, allocation_id: str) -> None:
        job = self.jobs.get(allocation_id)
        if job is None:
            self.killed_early.add(allocation_id)
            return
        if job.exit is not None or job.killed:
            return
        job.killed = True
        await asyncio.to_thread(_touch, job.dir / "killed")
        if job.job_id:
            self._spawn(self._signal(job))

    async def acknowledge(self, node: str, allocation_id: str) -> None:
        self.killed_early.discard(allocation_id)
        job = self.jobs.pop(allocation_id, None)
        if job is not None:
            await asyncio.to_thread(shutil.rmtree, job.dir, True)

    async def close(self) -> None:
        self._report = None
        tasks = [t for t in (self._poller, *self._tasks) if t is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._poller = None

    # -- nodes ---------------------------------------------------------------------------------

    async def _offered_nodes(self) -> list[Hello]:
        argv = ["sinfo", "--noheader", "--Node", "--format=%N|%c|%G|%T"]
        if self.settings.partition:
            argv.append(f"--partition={self.settings.partition}")
        seen: dict[str, Hello] = {}
        for line in (await slurm(*argv)).splitlines():
            parts = line.strip().split("|")
            if len(parts) != 4 or parts[0] in seen:
                continue
            name, cpus, gres, _state = parts
            slots = self._slots(int(cpus) if cpus.isdigit() else 1, _gpus(gres))
            seen[name] = Hello(
                agent_id=self.node_id(name),
                pool=self.pool.name,
                slots=slots,
                address=name,
                session=f"slurm:{self.pool.work_dir}",
                cpu=float(cpus) if cpus.isdigit() else 0.0,
            )
        if not seen:
            where = f"partition {self.settings.partition}" if self.settings.partition else "Slurm"
            raise ResourceManagerError(f"sinfo lists no node in {where}")
        return list(seen.values())

    def _slots(self, cpus: int, gpus: int) -> list[Slot]:
        kind = self.settings.slot_type or ("cuda" if gpus else "cpu")
        count = self.settings.slots_per_node or (gpus if kind == "cuda" else cpus)
        return [
            Slot(id=str(i), type=kind, name="gpu" if kind == "cuda" else "cpu")
            for i in range(count)
        ]

    def _hello(self, node: Hello) -> Hello:
        mine = [(a, j) for a, j in self.jobs.items() if j.node == node.agent_id]
        return replace(
            node,
            running=[a for a, j in mine if j.exit is None],
            exited=[j.exit for _, j in mine if j.exit is not None],
        )

    # -- jobs ----------------------------------------------------------------------------------

    def _load(self, path: Path) -> _Job | None:
        try:
            start = json.loads((path / "start.json").read_text())
        except (OSError, ValueError):
            if path.is_dir() and not (path / "start.json").exists():
                # A start the previous master was still writing: nothing was submitted.
                shutil.rmtree(path, ignore_errors=True)
            return None
        job = _Job(
            node=str(start.get("cluster_info", {}).get("agent_id", "")),
            dir=path,
            trial_id=int(start.get("trial_id", 0)),
            job_id=_read(path / "job_id"),
            killed=(path / "killed").exists(),
        )
        offset = _read(path / "offset")
        job.offset = int(offset) if offset.isdigit() else 0
        # What was reported before the restart is not reported again: a started allocation
        # stays started, and an exit already read is held until acknowledged.
        events = path / "events.jsonl"
        if events.exists():
            seen = events.read_bytes()[: job.offset].decode(errors="replace").splitlines()
            for message in read_events(seen, path.name, job.trial_id):
                if isinstance(message, Started):
                    job.started = True
                elif isinstance(message, Exited):
                    job.exit = message
        ended = path / "exit.json"
        if job.exit is None and ended.exists():
            raw = json.loads(ended.read_text())
            job.exit = Exited(path.name, raw.get("exit_code"), str(raw.get("reason", "")))
        return job

    async def _submit(self, alloc_id: str, job: _Job, message: Start) -> None:
        try:
            await asyncio.to_thread(self._write_start, job, message)
            out = await slurm(
                "sbatch", *self._sbatch_args(alloc_id, job, message), str(job.dir / "job.sh")
            )
        except (ResourceManagerError, OSError) as exc:
            job.submitting = False
            reason = f"could not submit the Slurm job: {exc}"
            await self._say(alloc_id, job, f"assay: {reason}")
            await self._end(alloc_id, job, 1, reason)
            return
        job.job_id = out.strip().split(";")[0]
        job.submitting = False
        await asyncio.to_thread((job.dir / "job_id").write_text, job.job_id)
        if job.killed:
            await self._signal(job)

    def _write_start(self, job: _Job, message: Start) -> None:
        job.dir.mkdir(parents=True, exist_ok=True)
        os.chmod(job.dir, 0o700)
        step = [
            self.settings.python or sys.executable,
            "-m",
            "assay.rm._step",
            "--start",
            str(job.dir / "start.json"),
            "--events",
            str(job.dir / "events.jsonl"),
            "--master",
            self.pool.master_url,
            "--work-root",
            str(self.pool.work_dir / "run"),
            "--token-file",
            str(self.pool.work_dir / "agent-token"),
            "--kill-grace",
            str(self.settings.kill_grace),
        ]
        (job.dir / "job.sh").write_text(f"#!/bin/sh\nexec {shlex.join(step)}\n")
        # Written last: a directory with a start.json is a submitted (or submitting) job.
        write_private(job.dir / "start.json", json.dumps(message.to_dict()))

    def _sbatch_args(self, alloc_id: str, job: _Job, message: Start) -> list[str]:
        s = self.settings
        args = [
            "--parsable",
            f"--job-name={JOB_PREFIX}{alloc_id}",
            f"--nodelist={self._slurm_node(job.node)}",
            "--nodes=1",
            "--ntasks=1",
            f"--output={job.dir / 'slurm.out'}",
            f"--chdir={job.dir}",
            f"--export={_EXPORTED}",
        ]
        args += [
            f"--{k}={v}"
            for k, v in (("partition", s.partition), ("qos", s.qos), ("account", s.account))
            if v
        ]
        count = len(message.slots)
        node = self.nodes.get(job.node)
        kind = node.slots[0].type if node and node.slots else "cpu"
        experiment = _experiment_slurm(message)
        if kind == "cuda":
            gpu_type = experiment.get("gpu_type")
            args.append(f"--gres=gpu:{gpu_type}:{count}" if gpu_type else f"--gres=gpu:{count}")
        else:
            args.append(f"--cpus-per-task={max(count, 1)}")
        args += list(s.sbatch_args)
        args += [str(a) for a in experiment.get("sbatch_args") or []]
        return args

    async def _signal(self, job: _Job) -> None:
        """A kill: SIGTERM to the step (which stops the processes, SIGKILL after the grace)
        once it runs; a job not yet running is cancelled outright."""
        loop = asyncio.get_running_loop()
        job.kill_deadline = loop.time() + self.settings.kill_grace + 10.0
        try:
            if job.started:
                await slurm("scancel", "--batch", "--signal=TERM", job.job_id)
            else:
                await slurm("scancel", job.job_id)
        except ResourceManagerError as exc:
            log.warning("pool %s: cancelling Slurm job %s: %s", self.pool.name, job.job_id, exc)

    async def _queue(self) -> dict[str, str]:
        """Allocation id -> Slurm job id of this pool's jobs Slurm still holds."""
        out = await slurm("squeue", "--noheader", "--me", "--format=%i|%j")
        jobs: dict[str, str] = {}
        for line in out.splitlines():
            job_id, _, name = line.strip().partition("|")
            if name.startswith(JOB_PREFIX):
                alloc_id = name[len(JOB_PREFIX) :]
                if alloc_id in self.jobs or (self._jobs_dir / alloc_id).exists():
                    jobs[alloc_id] = job_id
        return jobs

    # -- watching ------------------------------------------------------------------------------

    async def _poll(self) -> None:
        loop = asyncio.get_running_loop()
        nodes_at = loop.time()
        while True:
            await asyncio.sleep(self.settings.poll_interval)
            try:
                await self._look(loop.time())
                if loop.time() - nodes_at >= NODES_EVERY:
                    nodes_at = loop.time()
                    await self._look_at_nodes()
            except ResourceManagerError as exc:
                log.warning("pool %s: %s", self.pool.name, exc)
            except Exception:
                log.exception("pool %s: watching the Slurm jobs failed", self.pool.name)

    async def _look(self, now: float) -> None:
        live = {a: j for a, j in self.jobs.items() if j.exit is None and not j.submitting}
        for alloc_id, job in live.items():
            for message in await asyncio.to_thread(self._read_new, alloc_id, job):
                await self._send(job.node, message)
        unseen = [a for a, j in live.items() if j.exit is None and j.job_id]
        if not unseen:
            return
        queued = await self._queue()
        for alloc_id in unseen:
            held = self.jobs.get(alloc_id)
            if held is None or held.exit is not None:
                continue
            job = held
            if alloc_id in queued:
                if job.kill_deadline is not None and now > job.kill_deadline:
                    job.kill_deadline = None
                    with contextlib.suppress(ResourceManagerError):
                        await slurm("scancel", "--signal=KILL", job.job_id)
                continue
            # Gone from the queue: its last lines may have landed since the read above.
            for message in await asyncio.to_thread(self._read_new, alloc_id, job):
                await self._send(job.node, message)
            if job.exit is None:
                await asyncio.to_thread(self._end_unseen, alloc_id, job)
                await self._say(alloc_id, job, f"assay: {job.exit.reason if job.exit else ''}")
                if job.exit is not None:
                    await self._send(job.node, job.exit)

    async def _look_at_nodes(self) -> None:
        for hello in await self._offered_nodes():
            known = self.nodes.get(hello.agent_id)
            if known is None or known.slots != hello.slots:
                self.nodes[hello.agent_id] = hello
                await self._send(hello.agent_id, self._hello(hello))

    def _read_new(self, alloc_id: str, job: _Job) -> list[AgentMessage]:
        """The events appended since the last read, as messages; the read position is kept
        in the directory once they are taken."""
        path = job.dir / "events.jsonl"
        try:
            with path.open("rb") as f:
                f.seek(job.offset)
                data = f.read()
        except FileNotFoundError:
            return []
        complete = data.rfind(b"\n") + 1
        if complete == 0:
            return []
        lines = data[:complete].decode(errors="replace").splitlines()
        messages = read_events(lines, alloc_id, job.trial_id)
        job.offset += complete
        (job.dir / "offset").write_text(str(job.offset))
        for message in messages:
            if isinstance(message, Started):
                job.started = True
            elif isinstance(message, Exited):
                job.exit = message
        return messages

    def _end_unseen(self, alloc_id: str, job: _Job) -> None:
        reason = "killed" if job.killed else ENDED_UNSEEN
        if job.killed and not job.started:
            reason = "killed before it started"
        _write_exit(job.dir, None, reason)
        job.exit = Exited(alloc_id, None, reason)

    async def _end(self, alloc_id: str, job: _Job, code: int | None, reason: str) -> None:
        await asyncio.to_thread(_write_exit, job.dir, code, reason)
        job.exit = Exited(alloc_id, code, reason)
        await self._send(job.node, job.exit)

    async def _say(self, alloc_id: str, job: _Job, line: str) -> None:
        await self._send(job.node, Logs([LogEntry(alloc_id, job.trial_id, line, stream="stderr")]))

    async def _send(self, node: str, message: AgentMessage | Hello) -> None:
        report = self._report
        if report is not None:
            await report(node, message)

    def _spawn(self, work: Any) -> None:
        task: asyncio.Task[None] = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


def _gpus(gres: str) -> int:
    """GPUs in an ``sinfo`` GRES field such as ``gpu:2``, ``gpu:a100:4(S:0-1)``, ``(null)``."""
    total = 0
    for item in gres.split(","):
        parts = item.split("(")[0].split(":")
        if parts[0] == "gpu" and parts[-1].isdigit():
            total += int(parts[-1])
    return total


def _experiment_slurm(message: Start) -> dict[str, Any]:
    """The experiment's ``slurm`` section (Determined's: ``sbatch_args``, ``gpu_type``)."""
    trial = message.cluster_info.trial
    section = (trial.config if trial else {}).get("slurm")
    return section if isinstance(section, dict) else {}


def _write_exit(path: Path, code: int | None, reason: str) -> None:
    path.mkdir(parents=True, exist_ok=True)
    tmp = path / "exit.json.tmp"
    tmp.write_text(json.dumps({"exit_code": code, "reason": reason}))
    os.replace(tmp, path / "exit.json")


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def _touch(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.touch()


__all__ = ["SlurmManager", "SlurmPool", "event_line"]
