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
import getpass
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
from assay.protocol import (
    AgentMessage,
    Exited,
    Hello,
    LogEntry,
    Logs,
    Report,
    Slot,
    Start,
    Started,
    Welcome,
)
from assay.rm._slurm_commands import (
    experiment_slurm,
    gpus_in,
    last_words,
    read_text,
    slurm,
    touch,
    write_exit,
)
from assay.rm._step import read_events

log = logging.getLogger(__name__)

NODES_EVERY = 30.0
"""Seconds between looks at the partition's nodes (a changed node is offered again)."""
JOB_PREFIX = "assay-"
ENDED_UNSEEN = (
    "the Slurm job ended without reporting an exit (cancelled outside assay, out of time, "
    "or its node failed)"
)
_EXPORTED = "PATH,HOME,USER,LANG,LC_ALL,TMPDIR"
"""The master's variables a job starts with (the rest of its environment is its own)."""


@dataclass(frozen=True)
class SlurmPool:
    """One ``type: slurm`` pool as the manager needs it."""

    name: str
    settings: SlurmPoolConfig
    work_dir: Path
    master_url: str
    agent_token: str


@dataclass
class _Member:
    """One node's share of an allocation: its events file, what was read of it, its exit."""

    node: str
    slurm_node: str
    trial_id: int
    started: bool = False
    exit: Exited | None = None
    offset: int = 0


@dataclass
class _Job:
    """An allocation the manager holds (one Slurm job, over one node or a gang's nodes),
    mirrored in its directory."""

    alloc_id: str
    dir: Path
    members: dict[str, _Member] = field(default_factory=dict)
    """Node id -> its share."""
    expected: int = 1
    """How many nodes the allocation spans: a gang's job is submitted once all have a start."""
    starts: dict[str, Start] = field(default_factory=dict)
    job_id: str = ""
    submitting: bool = False
    killed: bool = False
    kill_deadline: float | None = None

    @property
    def started(self) -> bool:
        return any(m.started for m in self.members.values())

    @property
    def ended(self) -> bool:
        return all(m.exit is not None for m in self.members.values())


class SlurmManager:
    """The :class:`assay.rm.ResourceManager` of a Slurm partition.

    An allocation on one node is a batch job that runs the step program there. A gang over
    several nodes is one job over all of them (``--nodelist``), whose batch script starts the
    step once per node with ``srun``; each node's step reads its own start (its share of the
    ranks) and writes its own events, reported as that node's."""

    def __init__(self, pool: SlurmPool) -> None:
        self.pool = pool
        self.settings = pool.settings
        self.jobs: dict[str, _Job] = {}
        self.killed_early: set[str] = set()
        self.nodes: dict[str, Hello] = {}
        self._report: Report | None = None
        self._poller: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._warned_empty = False

    @property
    def _jobs_dir(self) -> Path:
        return self.pool.work_dir / "jobs"

    def node_id(self, slurm_node: str) -> str:
        return f"{self.pool.name}.{slurm_node}"

    def _slurm_node(self, node: str) -> str:
        return node.removeprefix(f"{self.pool.name}.")

    # -- the protocol ---------------------------------------------------------------------------

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
            job.job_id = job.job_id or queued.get(alloc_id, "")
            if not job.ended and alloc_id not in queued:
                # Ended while no master watched: its last events may hold the exits.
                await asyncio.to_thread(self._read_all, job)
                await asyncio.to_thread(self._end_unseen, job)
        hellos = [self._hello(h) for h in self.nodes.values()]
        self._report = report
        if self._poller is None:
            self._poller = asyncio.create_task(self._poll())
        return hellos

    async def start(self, node: str, message: Start) -> None:
        alloc_id = message.allocation_id
        job = self.jobs.get(alloc_id)
        if job is None:
            layout = message.distributed
            job = _Job(
                alloc_id=alloc_id,
                dir=self._jobs_dir / alloc_id,
                expected=layout.num_nodes if layout is not None else 1,
            )
            self.jobs[alloc_id] = job
        if node in job.members or job.submitting or job.job_id:
            return
        job.members[node] = _Member(node, self._slurm_node(node), message.trial_id)
        job.starts[node] = message
        if len(job.members) < job.expected:
            return  # a gang's job waits for every node's start
        if alloc_id in self.killed_early or job.killed:
            await asyncio.to_thread(job.dir.mkdir, parents=True, exist_ok=True)
            for member in list(job.members.values()):
                await self._end(job, member, None, "killed before it started")
            return
        job.submitting = True
        self._spawn(self._submit(job))

    async def kill(self, node: str, allocation_id: str, *, now: bool = False) -> None:
        job = self.jobs.get(allocation_id)
        if job is None:
            self.killed_early.add(allocation_id)
            return
        if job.ended or job.killed:
            return
        job.killed = True
        if job.dir.exists():
            await asyncio.to_thread(touch, job.dir / "killed")
        if job.job_id:
            self._spawn(self._signal(job, now=now))

    async def acknowledge(self, node: str, allocation_id: str) -> None:
        job = self.jobs.get(allocation_id)
        if job is None:
            self.killed_early.discard(allocation_id)
            return
        member = job.members.get(node)
        if member is None or member.exit is None:
            return
        del job.members[node]
        if not job.members:
            self.jobs.pop(allocation_id, None)
            self.killed_early.discard(allocation_id)
            await asyncio.to_thread(shutil.rmtree, job.dir, True)
        else:
            await asyncio.to_thread(touch, job.dir / f"acknowledged-{member.slurm_node}")

    async def welcome(self, node: str, message: Welcome) -> None:
        """Nothing to tell: a Slurm node is this manager's own, not a process on a socket."""

    async def close(self) -> None:
        self._report = None
        tasks = [t for t in (self._poller, *self._tasks) if t is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._poller = None

    # -- nodes ----------------------------------------------------------------------------------

    async def _offered_nodes(self) -> list[Hello]:
        argv = ["sinfo", "--noheader", "--Node", "--format=%N|%c|%G|%o"]
        if self.settings.partition:
            argv.append(f"--partition={self.settings.partition}")
        seen: dict[str, Hello] = {}
        for line in (await slurm(*argv)).splitlines():
            parts = line.strip().split("|")
            if len(parts) != 4 or parts[0] in seen:
                continue
            name, cpus, gres, address = parts
            seen[name] = Hello(
                agent_id=self.node_id(name),
                pool=self.pool.name,
                slots=self._slots(int(cpus) if cpus.isdigit() else 1, gpus_in(gres)),
                # Where a gang's other ranks reach this node's (Slurm's NodeAddr).
                address=address or name,
                session=f"slurm:{self.pool.work_dir}",
                cpu=float(cpus) if cpus.isdigit() else 0.0,
                # Its jobs run as the account that submits them: the master's.
                user=getpass.getuser(),
            )
        if not seen:
            if self.settings.partition:
                names = await slurm("sinfo", "--noheader", "--format=%R")
                known = ", ".join(sorted(set(names.split()))) or "none"
                raise ResourceManagerError(
                    f"slurm.partition: Slurm has no partition {self.settings.partition!r} with "
                    f"nodes (its partitions: {known})"
                )
            raise ResourceManagerError("sinfo lists no node")
        empty = [h.agent_id for h in seen.values() if not h.slots]
        if empty and not self._warned_empty:
            self._warned_empty = True
            log.warning(
                "pool %s: node(s) %s offer no slot with slot_type %s (no GPU in their GRES); "
                "set slot_type: cpu to run on their CPUs",
                self.pool.name,
                ", ".join(empty),
                self.settings.slot_type,
            )
        return list(seen.values())

    def _slots(self, cpus: int, gpus: int) -> list[Slot]:
        kind = self.settings.slot_type or ("cuda" if gpus else "cpu")
        count = self.settings.slots_per_node or (gpus if kind == "cuda" else cpus)
        name = "gpu" if kind == "cuda" else "cpu"
        return [Slot(id=str(i), type=kind, name=name) for i in range(count)]

    def _hello(self, node: Hello) -> Hello:
        # Held is running, to the master: submitted, being submitted, or a gang's share
        # waiting for the others' starts.
        mine = [
            (job.alloc_id, job.members[node.agent_id])
            for job in self.jobs.values()
            if node.agent_id in job.members
        ]
        return replace(
            node,
            running=[a for a, m in mine if m.exit is None],
            exited=[m.exit for _, m in mine if m.exit is not None],
        )

    # -- jobs -----------------------------------------------------------------------------------

    def _load(self, path: Path) -> _Job | None:
        starts = sorted(path.glob("start-*.json"))
        if not starts:
            # A start the previous master was still writing: nothing was submitted.
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            return None
        job = _Job(
            alloc_id=path.name,
            dir=path,
            job_id=read_text(path / "job_id"),
            killed=(path / "killed").exists(),
        )
        for start_file in starts:
            slurm_node = start_file.stem.removeprefix("start-")
            if (path / f"acknowledged-{slurm_node}").exists():
                continue
            raw = json.loads(start_file.read_text())
            node = str(raw.get("cluster_info", {}).get("agent_id", ""))
            member = _Member(node, slurm_node, int(raw.get("trial_id", 0)))
            offset = read_text(path / f"offset-{slurm_node}")
            member.offset = int(offset) if offset.isdigit() else 0
            # What was reported before the restart is not reported again: a started share
            # stays started, and an exit already read is held until acknowledged.
            events = path / f"events-{slurm_node}.jsonl"
            if events.exists():
                seen = events.read_bytes()[: member.offset].decode(errors="replace")
                self._take(member, read_events(seen.splitlines(), path.name, member.trial_id))
            ended = path / f"exit-{slurm_node}.json"
            if member.exit is None and ended.exists():
                code = json.loads(ended.read_text())
                member.exit = Exited(
                    path.name,
                    code.get("exit_code"),
                    str(code.get("reason", "")),
                    lost=code.get("lost") is True,
                )
            job.members[node] = member
        job.expected = len(job.members)
        return job if job.members else None

    async def _submit(self, job: _Job) -> None:
        try:
            await asyncio.to_thread(self._write_starts, job)
            args = self._sbatch_args(job)
            out = await slurm("sbatch", *args, str(job.dir / "job.sh"))
        except (ResourceManagerError, OSError) as exc:
            job.submitting = False
            reason = f"could not submit the Slurm job: {exc}"
            # A copy: an exit reported can be acknowledged (and its share dropped) at once.
            for member in list(job.members.values()):
                await self._say(job, member, f"assay: {reason}")
                await self._end(job, member, 1, reason)
            return
        job.job_id = out.strip().split(";")[0]
        job.submitting = False
        job.starts.clear()
        await asyncio.to_thread((job.dir / "job_id").write_text, job.job_id)
        if job.killed:
            await self._signal(job)

    def _write_starts(self, job: _Job) -> None:
        job.dir.mkdir(parents=True, exist_ok=True)
        os.chmod(job.dir, 0o700)
        node_var = "$SLURMD_NODENAME"
        step = [
            self.settings.python or sys.executable,
            "-m",
            "assay.rm",
            "--master",
            self.pool.master_url,
            "--token-file",
            str(self.pool.work_dir / "agent-token"),
            "--kill-grace",
            str(self.settings.kill_grace),
        ]
        where = shlex.quote(str(job.dir))
        run = shlex.quote(str(self.pool.work_dir / "run"))
        # Each node unpacks the context in a directory of its own: the work directory is one
        # filesystem for all of them.
        files = (
            f'--start {where}/start-"{node_var}".json --events {where}/events-"{node_var}".jsonl '
            f'--work-root {run}/"{node_var}"'
        )
        if job.expected == 1:
            (member,) = job.members.values()
            files = files.replace(node_var, member.slurm_node)
            script = f"exec {shlex.join(step)} {files}\n"
        else:
            # One step per node; each reads its own share of the ranks.
            inner = shlex.quote(f"exec {shlex.join(step)} {files}")
            script = f"exec srun --ntasks-per-node=1 --nodes={job.expected} sh -c {inner}\n"
        (job.dir / "job.sh").write_text("#!/bin/sh\n" + script)
        # Written last: a directory with a start is a submitted (or submitting) job.
        for node, message in job.starts.items():
            slurm_node = job.members[node].slurm_node
            write_private(job.dir / f"start-{slurm_node}.json", json.dumps(message.to_dict()))

    def _sbatch_args(self, job: _Job) -> list[str]:
        s = self.settings
        members = list(job.members.values())
        args = [
            "--parsable",
            f"--job-name={JOB_PREFIX}{job.alloc_id}",
            f"--nodelist={','.join(m.slurm_node for m in members)}",
            f"--nodes={len(members)}",
            "--ntasks-per-node=1",
            f"--output={job.dir / 'slurm.out'}",
            f"--chdir={job.dir}",
            f"--export={_EXPORTED}",
        ]
        chosen = (("partition", s.partition), ("qos", s.qos), ("account", s.account))
        args += [f"--{key}={value}" for key, value in chosen if value]
        message = next(iter(job.starts.values()))
        count = len(message.slots)
        node = self.nodes.get(members[0].node)
        kind = node.slots[0].type if node and node.slots else "cpu"
        experiment = experiment_slurm(message)
        if kind == "cuda":
            gpu_type = experiment.get("gpu_type")
            args.append(f"--gres=gpu:{gpu_type}:{count}" if gpu_type else f"--gres=gpu:{count}")
        else:
            args.append(f"--cpus-per-task={max(count, 1)}")
        args += list(s.sbatch_args)
        args += [str(a) for a in experiment.get("sbatch_args") or []]
        return args

    async def _signal(self, job: _Job, *, now: bool = False) -> None:
        """A kill: SIGTERM to the steps (which stop the processes, SIGKILL after the grace)
        once they run, or SIGKILL to all of the job at once (``now``); a job not yet running is
        cancelled outright."""
        loop = asyncio.get_running_loop()
        job.kill_deadline = loop.time() + self.settings.kill_grace + 10.0
        if not job.started:
            argv = ["scancel", job.job_id]
        else:
            # The step stops its processes: SIGTERM, then SIGKILL after the grace; at once on
            # its signal for a kill with ``now``.
            signal = f"--signal={'USR2' if now else 'TERM'}"
            if job.expected == 1:
                argv = ["scancel", "--batch", signal, job.job_id]
            else:
                argv = ["scancel", signal, job.job_id]  # srun hands it to each node's step
        try:
            await slurm(*argv)
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

    # -- watching -------------------------------------------------------------------------------

    async def _poll(self) -> None:
        loop = asyncio.get_running_loop()
        nodes_at = loop.time()
        failing = False
        while True:
            await asyncio.sleep(self.settings.poll_interval)
            try:
                await self._look(loop.time())
                if loop.time() - nodes_at >= NODES_EVERY:
                    nodes_at = loop.time()
                    await self._look_at_nodes()
            except ResourceManagerError as exc:
                # Said once per outage, not once a second: the jobs run on meanwhile.
                if not failing:
                    log.warning("pool %s: %s; retrying", self.pool.name, exc)
                failing = True
                continue
            except Exception:
                log.exception("pool %s: watching the Slurm jobs failed", self.pool.name)
                continue
            if failing:
                log.info("pool %s: Slurm answers again", self.pool.name)
                failing = False

    async def _look(self, now: float) -> None:
        live = [j for j in self.jobs.values() if j.job_id and not j.ended]
        for job in live:
            await self._report_new(job)
        unended = [j for j in live if not j.ended]
        if not unended:
            return
        queued = await self._queue()
        for job in unended:
            if job.alloc_id in queued:
                if job.kill_deadline is not None and now > job.kill_deadline:
                    job.kill_deadline = None
                    with contextlib.suppress(ResourceManagerError):
                        await slurm("scancel", "--signal=KILL", job.job_id)
                continue
            # Gone from the queue: its last lines may have landed since the read above.
            await self._report_new(job)
            for member in await asyncio.to_thread(self._end_unseen, job):
                assert member.exit is not None
                await self._say(job, member, f"assay: {member.exit.reason}")
                await self._send(member.node, member.exit)

    async def _report_new(self, job: _Job) -> None:
        for member in list(job.members.values()):
            if member.exit is None:
                for message in await asyncio.to_thread(self._read_new, job, member):
                    await self._send(member.node, message)

    async def _look_at_nodes(self) -> None:
        for hello in await self._offered_nodes():
            known = self.nodes.get(hello.agent_id)
            if known is None or known.slots != hello.slots:
                self.nodes[hello.agent_id] = hello
                await self._send(hello.agent_id, self._hello(hello))

    def _read_new(self, job: _Job, member: _Member) -> list[AgentMessage]:
        """The events appended since the last read, as messages; the read position is kept
        in the directory once they are taken."""
        path = job.dir / f"events-{member.slurm_node}.jsonl"
        try:
            with path.open("rb") as f:
                f.seek(member.offset)
                data = f.read()
        except FileNotFoundError:
            return []
        complete = data.rfind(b"\n") + 1
        if complete == 0:
            return []
        lines = data[:complete].decode(errors="replace").splitlines()
        messages = read_events(lines, job.alloc_id, member.trial_id)
        member.offset += complete
        (job.dir / f"offset-{member.slurm_node}").write_text(str(member.offset))
        self._take(member, messages)
        return messages

    def _read_all(self, job: _Job) -> None:
        for member in list(job.members.values()):
            if member.exit is None:
                self._read_new(job, member)

    @staticmethod
    def _take(member: _Member, messages: list[AgentMessage]) -> None:
        for message in messages:
            if isinstance(message, Started):
                member.started = True
            elif isinstance(message, Exited):
                member.exit = message

    def _end_unseen(self, job: _Job) -> list[_Member]:
        """Give an exit to each share of a job Slurm no longer holds that reported none;
        those shares."""
        ended = []
        said = last_words(job.dir / "slurm.out")
        for member in list(job.members.values()):
            if member.exit is not None:
                continue
            code: int | None = None
            lost = False
            if job.killed:
                reason = "killed" if member.started else "killed before it started"
            elif member.started:
                # Its node failed, or Slurm ended the job (time, preemption, an admin): the
                # cluster's loss, not the trial's failure, so it costs no max_restarts.
                reason, lost = ENDED_UNSEEN, True
            else:
                # The step never ran (no Python at the configured path, a work directory the
                # node does not share...): the job's failure, counted like any other.
                code = 1
                reason = "the Slurm job ended before assay's step started on the node" + (
                    f"; its output ends: {said}" if said else ""
                )
            write_exit(job.dir / f"exit-{member.slurm_node}.json", code, reason, lost=lost)
            member.exit = Exited(job.alloc_id, code, reason, lost=lost)
            ended.append(member)
        return ended

    async def _end(self, job: _Job, member: _Member, code: int | None, reason: str) -> None:
        await asyncio.to_thread(
            write_exit, job.dir / f"exit-{member.slurm_node}.json", code, reason
        )
        member.exit = Exited(job.alloc_id, code, reason)
        await self._send(member.node, member.exit)

    async def _say(self, job: _Job, member: _Member, line: str) -> None:
        entry = LogEntry(job.alloc_id, member.trial_id, line, stream="stderr")
        await self._send(member.node, Logs([entry]))

    async def _send(self, node: str, message: AgentMessage | Hello) -> None:
        report = self._report
        if report is not None:
            await report(node, message)

    def _spawn(self, work: Any) -> None:
        task: asyncio.Task[None] = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


__all__ = ["SlurmManager", "SlurmPool"]
