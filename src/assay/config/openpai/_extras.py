"""OpenPAI's ``extras``: what its plugins and schedulers read, and what assay makes of it.

A key that only hints at placement (HiveD's SKU types, gang allocation) or configures a runtime
convenience the commands do not compute with (the ``ssh`` plugin's keys for people) is accepted
with a note saying what happens instead. A key the commands rely on (a storage plugin that mounts
their data, an SSH barrier that ``mpirun`` waits on) is refused naming it, with what to do. A
key assay does not know is refused too: nothing here would read it.
"""

from __future__ import annotations

from typing import Any

from assay.config._base import Loc, Problem, show

RUNTIME_PLUGINS = "com.microsoft.pai.runtimeplugin"
_KNOWN = (RUNTIME_PLUGINS, "hivedScheduler", "gangAllocation", "submitFrom")
_HIVED = ("hivedScheduler", "hivedscheduler")
_SSH_KEYS = ("jobssh", "userssh", "sshbarrier", "sshbarrierTaskroles")
_INSTANCES_MEET = "instances reach each other through PAI_HOST_IP_* and their reserved ports"


def _path(loc: Loc) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def extras_findings(extras: Any) -> tuple[list[Problem], list[str]]:
    """The problems (located from the job's root) and the notes of a job's ``extras``."""
    problems: list[Problem] = []
    notes: list[str] = []
    if not isinstance(extras, dict):
        return problems, notes  # the schema says what is wrong with it
    for key, value in extras.items():
        loc: Loc = ("extras", key)
        if key == RUNTIME_PLUGINS:
            _plugins(value, loc, problems, notes)
        elif key in _HIVED:
            notes.append(
                f"{_path(loc)}: HiveD's placement hints (SKU types and counts, priority class, "
                "affinity groups) are not used; each instance runs on one agent with the slots "
                "its task role asks for"
            )
        elif key == "gangAllocation":
            if not isinstance(value, bool):
                problems.append((loc, f"must be true or false, got {show(value)}"))
            elif not value:
                notes.append(
                    f"{_path(loc)}: false is not honoured; assay starts a job's instances "
                    "together (gang scheduling), so it waits until all of them fit at once"
                )
        elif key == "submitFrom":
            continue  # which client submitted the job: for people only
        else:
            problems.append(
                (
                    loc,
                    "unknown extras key: nothing in assay reads it, so it cannot do what it does "
                    f"on OpenPAI; assay understands {', '.join(_KNOWN)}; remove it",
                )
            )
    return problems, notes


def _plugins(value: Any, loc: Loc, problems: list[Problem], notes: list[str]) -> None:
    if not isinstance(value, list):
        problems.append((loc, f"must be a list of {{plugin, parameters}} maps, got {show(value)}"))
        return
    for i, entry in enumerate(value):
        at: Loc = (*loc, i)
        if not isinstance(entry, dict) or not isinstance(entry.get("plugin"), str):
            problems.append((at, f"must be a map with a plugin name, got {show(entry)}"))
            continue
        name, parameters = entry["plugin"], entry.get("parameters") or {}
        unknown = [k for k in entry if k not in ("plugin", "parameters")]
        if unknown:
            problems.append(((*at, unknown[0]), "unknown key; valid keys are: parameters, plugin"))
        if not isinstance(parameters, dict):
            problems.append(((*at, "parameters"), f"must be a map, got {show(parameters)}"))
        elif name == "ssh":
            _ssh(parameters, at, problems, notes)
        elif name == "teamwise_storage":
            names = parameters.get("storageConfigNames")
            what = f" ({', '.join(map(str, names))})" if isinstance(names, list) else ""
            problems.append(
                (
                    at,
                    f"plugin teamwise_storage mounts the team's storage{what} into each "
                    "instance for the commands to read and write, and assay mounts no storage: "
                    "mount it at the same path on every agent's host and remove the plugin",
                )
            )
        elif name == "tensorboard":
            problems.append(
                (
                    at,
                    "plugin tensorboard starts TensorBoard beside the job, which assay does not; "
                    "remove the plugin and start TensorBoard yourself",
                )
            )
        else:
            problems.append(
                (
                    (*at, "plugin"),
                    f"runtime plugin {show(name)} is not run by assay (it runs only the ssh "
                    "plugin's settings, as a note); move what it does into the commands and "
                    "remove it",
                )
            )


def _ssh(parameters: dict[str, Any], at: Loc, problems: list[Problem], notes: list[str]) -> None:
    said: list[str] = []
    for key, value in parameters.items():
        where: Loc = (*at, "parameters", key)
        if key not in _SSH_KEYS:
            problems.append((where, f"unknown key; valid keys are: {', '.join(_SSH_KEYS)}"))
        elif key in ("sshbarrier", "sshbarrierTaskroles"):
            if value is False or value is None:
                continue
            problems.append(
                (
                    where,
                    "makes the instances wait until every instance's SSH server is up, for "
                    "commands that ssh into the others (mpirun -H ...); assay runs no SSH "
                    "server in instances, so those commands cannot work here: start a process "
                    "in every instance instead (e.g. torchrun or horovodrun with "
                    "PAI_HOST_IP_<role>_<index> addresses) and remove sshbarrier",
                )
            )
        elif key == "jobssh" and value:
            said.append(f"jobssh is not provided ({_INSTANCES_MEET})")
        elif key == "userssh" and value not in (None, {}, ""):
            said.append("userssh is not provided (no SSH server runs in instances)")
        elif key == "userssh":
            said.append("userssh is not provided")
    if said:
        notes.append(f"{_path(at)} (ssh): {'; '.join(said)}")


def more_successes_than_instances(path: str, wanted: int, instances: int) -> str:
    """The note for a role asking for more successes than it has instances: it can never end
    the job early, so the job succeeds once every instance has ended (OpenPAI's rule too)."""
    many = "instance" if instances == 1 else "instances"
    return (
        f"{path} ({wanted}) is more than the role's {instances} {many}: its successes never "
        "end the job early; the job succeeds once every instance has ended"
    )
