"""The rules of jobs that are not experiments, free of IO: when a job has succeeded or failed
(OpenPAI's completion policy), the shell script an instance runs, the ``PAI_*`` variables it
sees, and the ports it is given.

Completion (OpenPAI's, after FrameworkLauncher's): a role's ``min_failed_instances`` failed
instances fail the job (-1: that role never fails it); a role's ``min_succeeded_instances``
succeeded instances (default: all of that role's) end it SUCCEEDED (-1: that role never ends
it early); failure is checked first; and once every instance has ended without either, the job
SUCCEEDED. Whatever still runs when the outcome is decided is stopped.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from assay.protocol import PaiEnv, TaskInstanceState, TaskState

PORT_BASE = 20000
"""The lowest port handed to job instances. The range stays below the distributed trials'
rendezvous ports (29500 up) and below Linux's ephemeral ports (32768-60999): any outgoing
connection on the host may hold one of those, and an instance could not listen there."""
PORT_LIMIT = 29500
HTTP_PORT = "http"
"""The port label OpenPAI names an instance by: ``PAI_TASK_ROLE_<role>_HOST_LIST`` is each
instance's ``ip:port`` with its first ``http`` port, and ``PAI_CURRENT_CONTAINER_PORT`` is it."""
DEFAULT_PORTS = ("ssh", HTTP_PORT)
"""The labels OpenPAI's REST server reserves one port of for every instance whose role does not
declare them (so that every instance has an ``http`` port to be listed by)."""


@dataclass(frozen=True)
class RoleRule:
    name: str
    instances: int
    min_failed: int = 1
    min_succeeded: int | None = None


@dataclass(frozen=True)
class Outcome:
    state: TaskState
    """SUCCEEDED or FAILED."""
    reason: str


def _instances(n: int) -> str:
    return "1 instance" if n == 1 else f"{n} instances"


def decide(
    roles: Sequence[RoleRule], states: Mapping[str, Sequence[TaskInstanceState]]
) -> Outcome | None:
    """The job's outcome given its instances' states per role, or None while it is open."""
    for role in roles:
        failed = sum(1 for s in states.get(role.name, ()) if s == TaskInstanceState.FAILED)
        if role.min_failed != -1 and failed >= max(1, role.min_failed):
            return Outcome(
                TaskState.FAILED,
                f"{_instances(failed)} of role {role.name} failed "
                f"(minFailedInstances {role.min_failed})",
            )
    for role in roles:
        if role.min_succeeded == -1:
            continue
        need = role.instances if role.min_succeeded is None else max(1, role.min_succeeded)
        done = sum(1 for s in states.get(role.name, ()) if s == TaskInstanceState.SUCCEEDED)
        if done >= need:
            return Outcome(
                TaskState.SUCCEEDED,
                f"{_instances(done)} of role {role.name} succeeded (minSucceededInstances {need})",
            )
    if all(s.ended for role in roles for s in states.get(role.name, ())):
        return Outcome(TaskState.SUCCEEDED, "every instance ended")
    return None


def instance_script(commands: Sequence[str]) -> str:
    """The bash script of one instance: its commands in order in one shell (so ``cd`` and
    variables carry over), ending at the first that fails, with its exit code."""
    lines = ['export PAI_WORK_DIR="$PWD"']
    for command in commands:
        lines.append(command)
        lines.append("__assay_rc=$?; if [ $__assay_rc -ne 0 ]; then exit $__assay_rc; fi")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Placed:
    """Where an instance runs: its host address and its ports by label."""

    host: str
    ports: Mapping[str, Sequence[int]]


def pai_env(
    *,
    job_name: str,
    user: str,
    roles: Sequence[tuple[str, int]],
    role: str,
    index: int,
    placed: Mapping[tuple[str, int], Placed],
) -> dict[str, str]:
    """OpenPAI's variables for instance ``index`` of ``role``: who it is, and where every
    instance of the job runs (``PAI_HOST_IP_<role>_<idx>``, ``PAI_PORT_LIST_<role>_<idx>_<label>``)
    as far as they are placed."""
    env = {
        "PAI_JOB_NAME": job_name,
        "PAI_USER_NAME": user,
        "PAI_CURRENT_TASK_ROLE_NAME": role,
        "PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX": str(index),
        "PAI_TASK_INDEX": str(index),
        "PAI_TASK_ROLE_COUNT": str(len(roles)),
        "PAI_TASK_ROLE_LIST": ",".join(name for name, _ in roles),
    }
    for name, count in roles:
        env[f"PAI_TASK_ROLE_TASK_COUNT_{name}"] = str(count)
        hosts = []
        for i in range(count):
            where = placed.get((name, i))
            if where is None:
                continue
            env[f"PAI_HOST_IP_{name}_{i}"] = where.host
            for label, ports in where.ports.items():
                env[f"PAI_PORT_LIST_{name}_{i}_{label}"] = ",".join(str(p) for p in ports)
            http = _http_port(where)
            hosts.append(where.host if http is None else f"{where.host}:{http}")
        env[f"PAI_TASK_ROLE_{name}_HOST_LIST"] = ",".join(hosts)
    own = placed.get((role, index))
    if own is not None:
        env[PaiEnv.CONTAINER_HOST_IP] = own.host
        env[PaiEnv.CURRENT_CONTAINER_IP] = own.host
        for label, ports in own.ports.items():
            env[f"PAI_CONTAINER_HOST_{label}_PORT_LIST"] = ",".join(str(p) for p in ports)
        http = _http_port(own)
        if http is not None:
            env["PAI_CURRENT_CONTAINER_PORT"] = str(http)
    return env


def _http_port(where: Placed) -> int | None:
    """The instance's first ``http`` port; None only for an instance placed before every
    instance got one (its host is then listed alone)."""
    ports = where.ports.get(HTTP_PORT) or ()
    return ports[0] if ports else None


def instance_ports(declared: Mapping[str, int]) -> dict[str, int]:
    """The ports to reserve per instance: those its role declares (label -> how many), then one
    of each of OpenPAI's :data:`DEFAULT_PORTS` it does not declare, as OpenPAI's REST server
    adds them."""
    wanted = dict(declared)
    for label in DEFAULT_PORTS:
        wanted.setdefault(label, 1)
    return wanted


def pick_ports(
    taken: Collection[int], wanted: Mapping[str, int], base: int = PORT_BASE
) -> dict[str, list[int]]:
    """The lowest free ports at or above ``base``, ``wanted[label]`` of them per label, in the
    labels' order; raises ValueError when the range runs out."""
    out: dict[str, list[int]] = {}
    used = set(taken)
    port = base
    for label, count in wanted.items():
        ports: list[int] = []
        while len(ports) < count:
            if port >= PORT_LIMIT:
                raise ValueError(f"no free ports left between {base} and {PORT_LIMIT}")
            if port not in used:
                ports.append(port)
                used.add(port)
            port += 1
        out[label] = ports
    return out
