"""OpenPAI's templates: ``<% $parameters.x %>``, ``<% $secrets.x %>``, ``<% $data.uri[0] %>``...

A job's commands keep their templates as written; :func:`render_commands` fills them in when an
instance starts, so a secret's value is never stored in a command nor shown with one. The same
resolver checks every template when the job is read (:func:`template_problems`), so a template
that names nothing is refused at submission rather than found broken by a running instance.

``$parameters`` and ``$secrets`` are the job's; ``$data``, ``$output`` and ``$script`` are the
prerequisites the task role names with its ``data``, ``output`` and ``script`` keys. A reference
walks maps by ``.key`` and lists by ``[i]``; a string is put in as is, any other value as JSON.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from assay.config._jobspec import JobSpec, Prerequisite
from assay.errors import ErrorDetail, InvalidConfig

TEMPLATE = re.compile(r"<%(.*?)%>", re.DOTALL)
_UNCLOSED = re.compile(r"<%\s*\$")
"""What starts a template (``<% $``) with no ``%>`` after it; a bare ``<%`` is text."""
_REFERENCE = re.compile(r"\s*\$([A-Za-z_]\w*)((?:\.[^.\[\]\s%]+|\[\d+\])*)\s*")
_STEP = re.compile(r"\.([^.\[\]\s%]+)|\[(\d+)\]")
ROLE_SCOPED = ("data", "output", "script")
ROOTS = ("parameters", "secrets", *ROLE_SCOPED)
_ARTICLE = {"data": "a", "output": "an", "script": "a"}
_TEMPLATE_FORMATS = "<% $parameters.NAME %>, <% $secrets.NAME %> or <% $data.FIELD %>"

# The source formats whose commands hold OpenPAI templates; the commands of others run as
# written, whatever they contain.
TEMPLATED_FORMATS = frozenset({"openpai-v2"})


class _Unresolved(Exception):
    """A template that names nothing; the message says what it names and what there is."""


@dataclass(frozen=True)
class Scope:
    """What the templates of one task role's commands may name.

    A role-scoped root (``data``...) maps to the prerequisite the role names, to None when the
    role names none, and is absent when what it names is itself wrong (reported elsewhere, so
    its templates are not checked again).
    """

    parameters: Mapping[str, Any]
    secrets: Mapping[str, str]
    prerequisites: Mapping[str, Mapping[str, Any] | None] = field(default_factory=dict)
    role: str | None = None


def prerequisite_fields(prerequisite: Prerequisite) -> dict[str, Any]:
    """What ``<% $data.FIELD %>`` may name of a prerequisite: every key it was written with."""
    return {
        "name": prerequisite.name,
        "type": prerequisite.type,
        "uri": prerequisite.uri,
        **prerequisite.fields,
    }


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _names(keys: Any) -> str:
    return ", ".join(str(k) for k in keys)


def _resolve(body: str, scope: Scope) -> str:
    match = _REFERENCE.fullmatch(body)
    written = f"<%{body}%>"
    if match is None:
        raise _Unresolved(
            f"{written} is not a template assay can fill in; write {_TEMPLATE_FORMATS}"
        )
    root, steps = match.group(1), match.group(2)
    shown = f"<% ${root}{steps} %>"
    value: Any
    if root == "parameters":
        value, what = scope.parameters, "parameters"
    elif root == "secrets":
        value, what = scope.secrets, "secrets"
    elif root in ROLE_SCOPED:
        if root not in scope.prerequisites:
            return ""  # what the role names is wrong, and reported where it is named
        value = scope.prerequisites[root]
        if value is None:
            where = f"taskRoles.{scope.role}" if scope.role else "the task role"
            raise _Unresolved(
                f"{shown} needs the task role's {root} key, naming {_ARTICLE[root]} {root} "
                "prerequisite; "
                f"{where} has none"
            )
        what = f"prerequisite {value.get('name')}"
    else:
        raise _Unresolved(
            f"{shown} names ${root}; templates name "
            + ", ".join(f"${r}" for r in ROOTS[:-1])
            + f" or ${ROOTS[-1]}"
        )
    for depth, step in enumerate(_STEP.finditer(steps)):
        key, index = step.group(1), step.group(2)
        if key is not None:
            top = root if depth == 0 else None
            value, what = _key_step(value, key, top, what, shown), key
        else:
            value, what = _index_step(value, int(index), what, shown), f"{what}[{index}]"
    return _text(value)


def _key_step(value: Any, key: str, top: str | None, what: str, shown: str) -> Any:
    """``value[key]``; ``top`` is the root when ``value`` is it (``parameters``...)."""
    if not isinstance(value, Mapping):
        raise _Unresolved(f"{shown}: {what} is {_kind(value)}, which has no .{key}")
    if key in value:
        return value[key]
    if top == "parameters":
        has = f"parameters has: {_names(value)}" if value else "the job has no parameters"
        raise _Unresolved(f"{shown} names no parameter; {has}")
    if top == "secrets":
        has = f"secrets has: {_names(value)}" if value else "the job has no secrets"
        raise _Unresolved(f"{shown} names no secret; {has}")
    has = f"it has: {_names(value)}" if value else "it is empty"
    raise _Unresolved(f"{shown}: {what} has no {key}; {has}")


def _index_step(value: Any, index: int, what: str, shown: str) -> Any:
    if not isinstance(value, list):
        raise _Unresolved(f"{shown}: {what} is {_kind(value)}, not a list, so [{index}] is none")
    if index >= len(value):
        n = len(value)
        raise _Unresolved(f"{shown}: {what} has {n} item{'' if n == 1 else 's'}")
    return value[index]


def _kind(value: Any) -> str:
    if isinstance(value, str):
        return "a string"
    if isinstance(value, Mapping):
        return "a map"
    return f"{_text(value)}"


def template_problems(text: str, scope: Scope) -> list[str]:
    """What is wrong with each template of ``text`` in ``scope``, in order."""
    problems: list[str] = []
    for match in TEMPLATE.finditer(text):
        try:
            _resolve(match.group(1), scope)
        except _Unresolved as exc:
            problems.append(str(exc))
    outside = TEMPLATE.sub("", text)
    unclosed = _UNCLOSED.search(outside)
    if unclosed is not None:
        # Left as written, the shell would run it: `<` redirects from a file named `%`.
        opened = outside[unclosed.start() :][:40].splitlines()[0]
        problems.append(f"template {opened!r} is not closed: end it with %>")
    return problems


def render(text: str, scope: Scope) -> str:
    """``text`` with every template filled in; raises :class:`_Unresolved` on one that names
    nothing."""
    return TEMPLATE.sub(lambda m: _resolve(m.group(1), scope), text)


def role_scope(spec: JobSpec, role: str) -> Scope:
    """The scope of the templates of ``role``'s commands in ``spec``."""
    by_name = {p.name: prerequisite_fields(p) for p in spec.prerequisites}
    task_role = spec.role(role)
    chosen: dict[str, Mapping[str, Any] | None] = {}
    for root in ROLE_SCOPED:
        name = getattr(task_role, root)
        chosen[root] = None if name is None else by_name.get(name)
    return Scope(spec.parameters, spec.secrets, chosen, role)


def render_commands(spec: JobSpec, role: str) -> list[str]:
    """The commands an instance of task role ``role`` runs, with OpenPAI's templates filled in
    (secrets included: mask what they print with :func:`job_secret_values`).

    The commands of formats without templates (OpenPAI v1, Determined commands and tasks) are
    returned as written. Raises :class:`KeyError` for an unknown role and
    :class:`~assay.errors.InvalidConfig` for a template that names nothing, which a spec read by
    :func:`~assay.config.load_job_file` never has.
    """
    task_role = spec.role(role)
    if spec.source_format not in TEMPLATED_FORMATS:
        return list(task_role.commands)
    scope = role_scope(spec, role)
    rendered: list[str] = []
    problems: list[ErrorDetail] = []
    for i, command in enumerate(task_role.commands):
        try:
            rendered.append(render(command, scope))
        except _Unresolved as exc:
            problems.append(ErrorDetail(f"taskRoles.{role}.commands[{i}]", str(exc)))
    if problems:
        n = len(problems)
        raise InvalidConfig(
            f"cannot fill in the templates of task role {role}: {n} problem{'' if n == 1 else 's'}",
            problems,
        )
    return rendered


def job_secret_values(spec: JobSpec) -> list[str]:
    """Every secret value of ``spec``: its ``secrets`` and its variables marked secret."""
    values = set(spec.secrets.values())
    values.update(spec.env[name] for name in spec.secret_env if name in spec.env)
    for role in spec.roles:
        values.update(role.env[name] for name in spec.secret_env if name in role.env)
    return sorted(v for v in values if v)
