"""Running one allocation: unpack the context, start the entrypoint, stream its output, stop it.

Each process runs under the launcher (:mod:`assay.agent._launch`) as the leader of its own
process group: stopping it signals the whole group, and the agent's death (even by SIGKILL)
ends the group within moments, so no orphan keeps training on a GPU.

The entrypoint runs once per node, as Determined's does: once on this agent however many of
its slots the allocation holds, with those slots in ``CUDA_VISIBLE_DEVICES``. A distributed
allocation's process also gets this agent's share of the rank layout (``ASSAY_RANK_LAYOUT``),
from which a launcher (:mod:`assay.launch`) starts the ranks; the lines they tag
``[rank=N]`` are logged as that rank's.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import re
import shlex
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path

from assay.agent._containers import (
    ContainerRuntime,
    container_name,
    container_pythonpath,
    in_bash,
    owner,
    storage_dirs,
    write_registry_auth,
)
from assay.agent._forking import ForkedProcess, ZygoteClient, direct_python
from assay.agent._launch import trial_command
from assay.agent._ports import busy_ports, free_pair, with_ports
from assay.agent._slots import visible_devices
from assay.client import HttpSession
from assay.compat import trial_pythonpath
from assay.context import extract_archive
from assay.protocol import (
    AGENT_TOKEN_ENV,
    RELAY_ENV,
    AdaptDLEnv,
    DetEnv,
    LogEntry,
    Mount,
    NniEnv,
    Slot,
    Start,
    TrialEnv,
    failure_reason,
)
from assay.protocol import trace_mark as mark

log = logging.getLogger(__name__)

Process = asyncio.subprocess.Process | ForkedProcess
LogSink = Callable[[LogEntry], None]
ExitSink = Callable[[str, int | None, str], Awaitable[None]]
StartSink = Callable[[str], Awaitable[None]]

MAX_LINE = 64 * 1024
_RANK_TAG = re.compile(r"^\[rank=(\d{1,6})\] ")
_CONTAINER_KEEPS = ("PYTHONPATH", "PYTHONUNBUFFERED", "ASSAY_CA_CERT")
"""Variables of the host's a container gets all the same (assay sets or needs them)."""


@dataclass
class AgentEnv:
    """What every allocation on this agent shares."""

    agent_id: str
    master_url: str
    work_root: Path
    http: HttpSession
    slots: dict[str, Slot]
    kill_grace: float = 10.0
    zygote: ZygoteClient | None = None
    """Forks the trials whose entrypoint is a plain ``python3 SCRIPT``; None: every trial
    starts through the launcher and the shell."""
    containers: ContainerRuntime | None = None
    """Runs the allocations that name an image; None: this agent is given none."""
    relay: str = ""
    """The address of the agent's relay of metric reports (``ASSAY_AGENT_RELAY``); empty: a
    trial sends its own over HTTP."""


def startup_script(entrypoint: str | list[str]) -> str:
    """The shell script an allocation runs: ``startup-hook.sh`` (sourced, so it can set
    variables) if the context has one, then the entrypoint in place of the shell."""
    command = entrypoint if isinstance(entrypoint, str) else shlex.join(entrypoint)
    return (
        "if [ -f startup-hook.sh ]; then\n"
        '  . ./startup-hook.sh || { rc=$?; echo "startup-hook.sh failed (exit code $rc)" >&2; '
        "exit $rc; }\n"
        "fi\n"
        f"exec {command}\n"
    )


def base_environment() -> dict[str, str]:
    """What every process this agent starts for a trial gets before the allocation's own
    variables: the agent's environment less its ``ASSAY_`` variables, the agent's Python first
    on the ``PATH``, unbuffered output, assay's shims on the ``PYTHONPATH``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    # The CA bundle too: a trial reaches an https master with the agent's trust.
    for name in ("ASSAY_HOME", "ASSAY_CA_CERT"):
        if name in os.environ:
            env[name] = os.environ[name]
    python_bin = str(Path(sys.executable).parent)
    env["PATH"] = python_bin + os.pathsep + env.get("PATH", "")
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONPATH"] = trial_pythonpath(os.environ.get("PYTHONPATH"))
    return env


class AllocationRunner:
    def __init__(
        self,
        env: AgentEnv,
        message: Start,
        *,
        on_log: LogSink,
        on_start: StartSink,
        on_exit: ExitSink,
    ) -> None:
        self.env = env
        self.message = message
        self.allocation_id = message.allocation_id
        self.trial_id = message.trial_id
        self.on_log = on_log
        self.on_start = on_start
        self.on_exit = on_exit
        self.layout = message.distributed
        self.processes: list[tuple[int, Process]] = []
        """(rank, process) of each process started so far."""
        self.killing = False
        self.failures: dict[int, str] = {}
        """Each rank's last failure line (``assay.protocol.failure_line``): the exit's reason."""
        self.kill_now = False
        """Killed with SIGKILL at once, without the grace (see :meth:`kill`)."""
        # Held so the event loop's weak reference is not the only one to a running task.
        self._kill_task: asyncio.Task[None] | None = None
        self._stop_task: asyncio.Task[None] | None = None
        self.started_at = time.time()
        self.dir = env.work_root / "allocations" / self.allocation_id
        self.container = container_name(self.allocation_id) if message.container else ""
        self._auth_dir = env.work_root / "registry-auth" / self.allocation_id

    async def run(self) -> None:
        mark("agent-start-received", self.allocation_id)
        try:
            code_dir = await self._prepare()
        except Exception as exc:
            self._log(
                "stderr", f"assay agent {self.env.agent_id}: could not start {self._what}: {exc}"
            )
            await self.on_exit(self.allocation_id, 1, f"could not start: {exc}")
            return
        if self.killing:
            await self.on_exit(self.allocation_id, None, "killed before it started")
            return
        entrypoint = self.message.entrypoint
        refusal = self._container_refusal() or await self._check_ports()
        if refusal:
            self._log("stderr", refusal)
            await self.on_exit(self.allocation_id, 1, refusal)
            return
        mark("agent-prepared", self.allocation_id)
        env = self._environment()
        if self.layout is not None:
            env[TrialEnv.RANK_LAYOUT] = json.dumps(self.layout.to_dict())
        rank = self.layout.first_rank if self.layout else 0
        try:
            process = await self._spawn(entrypoint, code_dir, env)
        except OSError as exc:
            # Out of processes or file descriptors: report the failure rather than leave the
            # allocation running forever.
            self._log(
                "stderr", f"assay agent {self.env.agent_id}: could not start {self._what}: {exc}"
            )
            await self.on_exit(self.allocation_id, 1, f"could not start: {exc}")
            return
        mark("agent-spawned", self.allocation_id)
        self.processes.append((rank, process))
        await self.on_start(self.allocation_id)
        if self.killing:
            # The kill came while the processes were being created.
            self._kill_task = asyncio.create_task(self.kill())
        code, reason = await self._wait_all()
        mark("agent-exit-detected", self.allocation_id)
        if self.message.container is not None and self.env.containers is not None:
            # Gone already unless the runtime's client was killed before the container ended.
            await self.env.containers.remove(self.container)
            await asyncio.to_thread(shutil.rmtree, self._auth_dir, True)
        await self.on_exit(self.allocation_id, code, reason)

    def _container_refusal(self) -> str:
        if self.message.container is None or self.env.containers is not None:
            return ""
        return (
            f"assay agent {self.env.agent_id}: {self._what} runs in image "
            f"{self.message.container.image}, and this agent has no container runtime (start it "
            "with --container-runtime podman or docker)"
        )

    async def _spawn(
        self, entrypoint: str | list[str], code_dir: Path, env: dict[str, str]
    ) -> Process:
        """The allocation's process: forked by the agent's zygote where the entrypoint is a
        plain ``python3 SCRIPT`` (a fresh process all the same, without the interpreter's
        start-up), else under the launcher through the shell."""
        if self.message.container is not None and self.env.containers is not None:
            command = self._container_command(entrypoint, code_dir, env)
            return await self._launch(command, code_dir, env)
        zygote = self.env.zygote
        argv = direct_python(entrypoint, code_dir) if zygote is not None else None
        if zygote is not None and argv is not None and self.layout is None:
            try:
                return await zygote.spawn(argv, code_dir, env)
            except OSError as exc:
                log.warning(
                    "the trial zygote could not start %s (%s); starting it afresh",
                    self.allocation_id,
                    exc,
                )
        return await self._launch(["/bin/bash", "-c", startup_script(entrypoint)], code_dir, env)

    async def _launch(self, command: list[str], code_dir: Path, env: dict[str, str]) -> Process:
        # From the event loop's thread, which lives as long as the agent: the parent death
        # signal follows the thread that started the process.
        return await asyncio.create_subprocess_exec(
            *trial_command(command),
            cwd=str(code_dir),
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
            limit=MAX_LINE,
        )

    def _container_command(
        self, entrypoint: str | list[str], code_dir: Path, env: dict[str, str]
    ) -> list[str]:
        """The runtime's command that runs the entrypoint (after ``startup-hook.sh``) in the
        allocation's container; ``env`` gets the container's ``PYTHONPATH``."""
        runtime, container = self.env.containers, self.message.container
        assert runtime is not None and container is not None
        host = base_environment()
        # The image's own PATH and Python; the trial's variables and assay's, not the host's.
        # The runtime shows the container only the slots' GPUs, so host indices would be wrong.
        names = [
            k
            for k in env
            if k not in ("PATH", "CUDA_VISIBLE_DEVICES")
            and (k not in host or k in self.message.env or k in _CONTAINER_KEEPS)
        ]
        env["PYTHONPATH"] = container_pythonpath(self.message.env.get("PYTHONPATH"))
        shared = [str(self.dir), *storage_dirs(self.message.cluster_info.checkpoint_storage)]
        if env.get("ASSAY_CA_CERT"):
            ca = str(Path(env["ASSAY_CA_CERT"]).resolve())
            env["ASSAY_CA_CERT"] = ca
            container = replace(container, mounts=[*container.mounts, Mount(ca, ca, True)])
        return runtime.run_argv(
            name=self.container,
            owned_by=owner(self.env.agent_id, self.env.work_root),
            container=container,
            workdir=code_dir,
            shared=shared,
            env_names=names,
            gpus=[self.env.slots[s] for s in self.message.slots if s in self.env.slots],
            # Outside the allocation's directory, which the trial sees: the credentials are
            # the runtime's, not the trial's; removed with the container.
            auth_dir=write_registry_auth(container, self._auth_dir),
            command=in_bash(startup_script(entrypoint)),
        )

    async def _check_ports(self) -> str:
        """Probe the rendezvous ports on the rank-0 agent before the ranks need them.

        All ranks here: a busy pair is swapped for a free one, and the layout every rank's
        variables come from carries the new ports. A gang of several agents: the others were
        told the master's ports, so the trial fails here with a line naming the busy port (the
        master shifts the ports when it runs the trial again). An empty string: go ahead."""
        layout = self.layout
        if layout is None or layout.node_rank != 0:
            return ""
        busy = await asyncio.to_thread(busy_ports, layout)
        if not busy:
            return ""
        names = " and ".join(str(p) for p in busy)
        what = f"rendezvous port {names} is" if len(busy) == 1 else f"rendezvous ports {names} are"
        if layout.num_nodes > 1:
            return (
                f"assay agent {self.env.agent_id}: {what} already in use on "
                f"this host, and the trial's {layout.num_nodes} agents were told to meet there; "
                "free the port (or let the trial restart on another)"
            )
        port = await asyncio.to_thread(free_pair)
        self.layout = with_ports(layout, port)
        self._log(
            "stderr",
            f"assay agent {self.env.agent_id}: {what} already in use on this host; the ranks "
            f"meet on ports {port} and {port + 1} instead",
        )
        return ""

    async def _wait_all(self) -> tuple[int | None, str]:
        """Wait for every process; stop the others once one fails. The first failing code (0
        when all succeed) and why."""
        tasks = {
            asyncio.create_task(self._wait_one(rank, proc)): rank for rank, proc in self.processes
        }
        failed: tuple[int, int] | None = None
        pending = set(tasks)
        while pending:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                code = task.result()
                if code != 0 and failed is None:
                    failed = (tasks[task], code)
                    if pending and not self.killing:
                        self._stop_task = asyncio.create_task(self._stop_processes())
        first = failed[1] if failed else 0
        if self.killing:
            return first, "killed"
        if failed is None:
            return first, ""
        # What the harness said stopped it (its failure line), the failing rank's first.
        said = self.failures.get(failed[0]) or next(iter(self.failures.values()), "")
        return first, said

    async def _wait_one(self, rank: int, process: Process) -> int:
        assert process.stdout is not None and process.stderr is not None
        readers = [
            asyncio.create_task(self._pump(process.stdout, "stdout", rank)),
            asyncio.create_task(self._pump(process.stderr, "stderr", rank)),
        ]
        code = await process.wait()
        # Helpers the trial left behind would hold its output pipes open and its slots busy.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        await asyncio.gather(*readers, return_exceptions=True)
        return code

    @property
    def _what(self) -> str:
        return "the trial" if self.message.trial_id else "the job's instance"

    async def _prepare(self) -> Path:
        # One trip to a worker thread for all of it: each trip is a wake-up of the event loop
        # between one trial's end and the next one's start.
        return await asyncio.to_thread(self._prepare_files)

    def _prepare_files(self) -> Path:
        context = self.message.context
        if self.dir.exists():
            shutil.rmtree(self.dir, True)
        code_dir = self.dir / "code"
        if context is None:
            code_dir.mkdir(parents=True)
        else:
            extract_archive(self._context_bytes(context.id, context.sha256), code_dir)
        info = replace(self.message.cluster_info, master_url=self.env.master_url)
        (self.dir / "cluster_info.json").write_text(json.dumps(info.to_dict()))
        (self.dir / "output").mkdir()
        if self.message.trial_id:
            (self.dir / "tensorboard").mkdir()
        self._adaptdl_paths()
        return code_dir

    def _adaptdl_paths(self) -> None:
        """Make the AdaptDL directories the master named."""
        for name in AdaptDLEnv.PATHS:
            if self.message.env.get(name):
                Path(self.message.env[name]).mkdir(parents=True, exist_ok=True)

    def _context_bytes(self, context_id: int, sha256: str) -> bytes:
        """The context archive, from this agent's cache or downloaded once from the master."""
        cache = self.env.work_root / "contexts" / f"{sha256}.tar.gz"
        if cache.exists():
            return cache.read_bytes()
        data: bytes = self.env.http.get(f"/api/v1/contexts/{context_id}", raw=True, timeout=300.0)
        actual = hashlib.sha256(data).hexdigest()
        if actual != sha256:
            raise RuntimeError(
                f"context {context_id} arrived corrupted (sha256 {actual}, expected {sha256})"
            )
        cache.parent.mkdir(parents=True, exist_ok=True)
        # Allocations of one experiment may fetch the same context at once: each writes its own
        # temporary file, and whichever lands last replaces an identical one.
        fd, tmp = tempfile.mkstemp(dir=cache.parent, prefix=f".{sha256[:12]}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, cache)
        return data

    def _environment(self) -> dict[str, str]:
        env = base_environment()
        env_path = os.environ.get("PYTHONPATH")
        # Every process of a distributed allocation sees all of its slots on this agent, as
        # torchrun's do: each picks its device by LOCAL_RANK.
        slots = [self.env.slots[s] for s in self.message.slots if s in self.env.slots]
        env["CUDA_VISIBLE_DEVICES"] = visible_devices(slots)
        env.update(self.message.env)
        # After the experiment's variables: `import determined` / `import nni` must find assay's
        # shims even when the experiment sets a PYTHONPATH of its own.
        env["PYTHONPATH"] = trial_pythonpath(self.message.env.get("PYTHONPATH", env_path))
        env[TrialEnv.MASTER] = self.env.master_url
        env.setdefault(DetEnv.MASTER, self.env.master_url + DetEnv.PREFIX)
        env[TrialEnv.CLUSTER_INFO] = str(self.dir / "cluster_info.json")
        env[TrialEnv.AGENT_ID] = self.env.agent_id
        env[NniEnv.SYS_DIR] = str(self.dir)
        env[NniEnv.OUTPUT_DIR] = str(self.dir / "output")
        if self.message.trial_id:
            # The harness copies this directory's files to checkpoint storage; AdaptDL's code
            # writes its TensorBoard files to the same place.
            board = str(self.dir / "tensorboard")
            env[TrialEnv.TENSORBOARD_DIR] = board
            if AdaptDLEnv.CHECKPOINT_PATH in self.message.env:
                env[AdaptDLEnv.TENSORBOARD_LOGDIR] = board
        # The agent's own credential is not the trial's (nor is any experiment's to set).
        env.pop(AGENT_TOKEN_ENV, None)
        env.pop(RELAY_ENV, None)
        if self.env.relay and self.message.container is None:
            # A container has a network of its own, where the relay's socket is not.
            env[RELAY_ENV] = self.env.relay
        return env

    async def _pump(self, stream: asyncio.StreamReader, name: str, rank: int) -> None:
        while True:
            try:
                raw = await stream.readuntil(b"\n")
            except asyncio.IncompleteReadError as exc:
                if exc.partial:
                    self._log_line(name, exc.partial.decode(errors="replace"), rank)
                return
            except asyncio.LimitOverrunError as exc:
                raw = await stream.read(exc.consumed)
            self._log_line(name, raw.decode(errors="replace").rstrip("\n"), rank)

    def _log_line(self, stream: str, line: str, rank: int) -> None:
        """A line of the node's output: a distributed one's launcher tags each rank's lines
        with Determined's ``[rank=N]`` prefix, which makes the line that rank's."""
        if self.layout is not None:
            tagged = _RANK_TAG.match(line)
            if tagged and int(tagged.group(1)) < self.layout.world_size:
                rank = int(tagged.group(1))
        if stream == "stderr":
            said = failure_reason(line)
            if said is not None:
                self.failures[rank] = said
        self._log(stream, line, rank)

    def _log(self, stream: str, line: str, rank: int = 0) -> None:
        self.on_log(
            LogEntry(
                allocation_id=self.allocation_id,
                trial_id=self.trial_id,
                line=line,
                rank=rank,
                stream=stream,
                time=time.time(),
            )
        )

    async def kill(self, *, now: bool = False) -> None:
        """SIGTERM to every process group, SIGKILL after the grace period; ``now``: SIGKILL at
        once (the master has given the allocation up, and its trial may run elsewhere)."""
        self.killing = True
        self.kill_now = self.kill_now or now
        await self._stop_processes()

    async def _stop_processes(self) -> None:
        live = [proc for _, proc in self.processes if proc.returncode is None]
        if not live:
            return
        first = signal.SIGKILL if self.kill_now else signal.SIGTERM
        for proc in live:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, first)
        try:
            await asyncio.wait_for(
                asyncio.gather(*(proc.wait() for proc in live)), self.env.kill_grace
            )
        except TimeoutError:
            for proc in live:
                if proc.returncode is None:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(proc.pid, signal.SIGKILL)

    def remove_files(self) -> None:
        """The allocation's unpacked context and cluster info, once its exit is recorded."""
        shutil.rmtree(self.dir, ignore_errors=True)

    @property
    def running(self) -> bool:
        return not self.processes or any(p.returncode is None for _, p in self.processes)
