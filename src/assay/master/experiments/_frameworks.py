"""An entrypoint that imports a training framework no agent of its pool can import is refused
at submission, naming the module and the command that installs it, instead of every trial
failing on ``ModuleNotFoundError`` after it was scheduled, started and restarted.

What the script needs is read from its top-level ``import`` statements (parsed, never run):
an import inside a function, a ``try``, or an ``if`` may be optional and is not counted. What
the agents offer is what each said in its hello (:attr:`~assay.protocol.Hello.frameworks`).
The check refuses only when the pool has connected agents, every one of them said it lacks
the framework, and the trials run the agents' own Python: a trial in a container image, or in
a Slurm or Kubernetes pool, runs another interpreter, which the agents know nothing about.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from assay.compat import SHIMS_DIR
from assay.config import ExperimentConfig, MasterConfig, is_trial_class, trial_class_module
from assay.context import MemberInfo, read_member
from assay.errors import ErrorDetail, InvalidConfig
from assay.master.experiments._entrypoint_files import _first_command, entrypoint_script
from assay.master.kernel import trial_image
from assay.protocol import FRAMEWORKS

MAX_SCRIPT_BYTES = 4 * 1024 * 1024
"""A larger entrypoint script is not read (it is not checked): a script is kilobytes."""


PROVIDED = (
    "determined.core, .pytorch, .pytorch.deepspeed, .pytorch.experimental, .keras, .launch and "
    ".exec"
)
"""What assay's ``determined`` package has, as a refusal names it."""

NEEDS: dict[str, str] = {
    "determined.pytorch.deepspeed": "deepspeed",
    "determined.pytorch": "torch",
    "determined.keras": "tensorflow",
}
"""Modules of assay's ``determined`` package that need a framework in the trial's Python."""


@dataclass(frozen=True)
class ScriptImports:
    """The entrypoint's script (its path in the context; a Trial class's module) and the
    frameworks it imports at its top level, in the order it imports them; ``apis``: the parts
    of assay's ``determined`` package of :data:`NEEDS` among them."""

    script: str
    frameworks: tuple[str, ...]
    apis: tuple[str, ...] = ()
    unprovided: tuple[str, ...] = ()
    """Modules of Determined's package it imports that assay's ``determined`` does not have."""


@dataclass(frozen=True)
class OfferedFrameworks:
    """What one connected agent said of its frameworks (an agent that did not name one, an
    older one, may have it)."""

    pool: str
    frameworks: dict[str, bool]


def script_imports(
    entrypoint: str | Sequence[str], context: bytes, members: Sequence[MemberInfo]
) -> ScriptImports | None:
    """The frameworks the entrypoint's Python script imports at its top level; None when
    the entrypoint runs no script this can read (a module, a shell command, a script missing
    from the context, one that does not parse)."""
    script = _script(entrypoint)
    if script is None:
        return None
    names = {m.name for m in members}
    if script not in names:
        return None  # refused already, or a directory run by its __main__.py
    # A module or package of the context's own by a framework's name is what it imports.
    own = {n.split("/", 1)[0].removesuffix(".py") for n in names}
    data = read_member(context, script, max_bytes=MAX_SCRIPT_BYTES)
    if data is None:
        return None
    try:
        tree = ast.parse(data, filename=script)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None  # python says what is wrong when the trial runs it
    found: list[str] = []
    apis: list[str] = []
    unprovided: list[str] = []
    for statement in tree.body:
        for dotted in _imported(statement):
            top = dotted.split(".", 1)[0]
            if top in own:
                continue
            needed = _framework(dotted)
            if needed is not None and needed not in found:
                found.append(needed)
            api = _api(dotted)
            if api is not None and api not in apis:
                apis.append(api)
        for module in _determined_modules(statement):
            if not _provided(module) and module not in unprovided:
                unprovided.append(module)
    return ScriptImports(script, tuple(found), tuple(apis), tuple(unprovided))


def _determined_modules(statement: ast.stmt) -> list[str]:
    """The modules of ``determined`` a statement imports by name: ``import determined.x``,
    ``from determined.x import y`` (``determined.x``, and ``determined.x.y`` where ``y`` is
    not a name ``determined.x`` exports)."""
    if isinstance(statement, ast.Import):
        names = [alias.name for alias in statement.names]
    elif isinstance(statement, ast.ImportFrom) and statement.level == 0 and statement.module:
        names = [statement.module]
        exported = _exported(statement.module)
        if exported is not None:
            names += [f"{statement.module}.{a.name}" for a in statement.names if a.name != "*"]
            names = [n for n in names if n.rsplit(".", 1)[-1] not in exported]
    else:
        return []
    return [n for n in names if n.split(".", 1)[0] == "determined" and n != "determined"]


def _shim(module: str) -> Path | None:
    """Where assay's package has ``module`` (a dotted name): its file or package directory."""
    path = SHIMS_DIR.joinpath(*module.split("."))
    if (path / "__init__.py").is_file():
        return path / "__init__.py"
    if path.with_suffix(".py").is_file():
        return path.with_suffix(".py")
    return None


def _provided(module: str) -> bool:
    return _shim(module) is not None


@functools.cache
def _exported(module: str) -> frozenset[str] | None:
    """The names bound at the top of assay's package ``module`` (read, never imported), its
    submodules left out; None when it is not a package of assay's."""
    init = _shim(module)
    if init is None or init.name != "__init__.py":
        return None
    names: set[str] = set()
    for statement in ast.walk(ast.parse(init.read_text())):
        if isinstance(statement, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".", 1)[0] for a in statement.names)
        elif isinstance(statement, ast.FunctionDef | ast.ClassDef):
            names.add(statement.name)
        elif isinstance(statement, ast.Name) and isinstance(statement.ctx, ast.Store):
            names.add(statement.id)
    return frozenset(n for n in names if not _provided(f"{module}.{n}"))


def _api(dotted: str) -> str | None:
    """The part of :data:`NEEDS` importing ``dotted`` loads, if any."""
    return next((n for n in NEEDS if dotted == n or dotted.startswith(f"{n}.")), None)


def _framework(dotted: str) -> str | None:
    """The framework importing ``dotted`` needs, if any."""
    top = dotted.split(".", 1)[0]
    # `determined` is assay's own on every trial's path; only a part of Determined's package
    # assay's lacks needs Determined's own (ScriptImports.unprovided).
    if top in FRAMEWORKS and top != "determined":
        return top
    for name, framework in NEEDS.items():
        if dotted == name or dotted.startswith(f"{name}."):
            return framework
    return None


def _script(entrypoint: str | Sequence[str]) -> str | None:
    """The script a ``python SCRIPT`` entrypoint runs, also behind a launcher (``python3 -m
    determined.launch.torch_distributed [options] python3 train.py``), or the module of a
    Trial class (``model_def:MyTrial``)."""
    module = trial_class_module(entrypoint)
    if module is not None:
        return module
    script = entrypoint_script(entrypoint)
    if script is not None:
        return script
    words = _first_command(entrypoint) if isinstance(entrypoint, str) else list(entrypoint)
    if not words or "-m" not in words:
        return None
    after = words[words.index("-m") + 2 :]  # past the launcher's module
    for i, word in enumerate(after):
        script = entrypoint_script(after[i:])
        if script is not None or word == "--":
            return script
    return None


def _imported(statement: ast.stmt) -> list[str]:
    """The dotted modules an import statement loads (``from determined import pytorch``
    loads ``determined.pytorch``; relative imports load the context's own)."""
    if isinstance(statement, ast.Import):
        return [alias.name for alias in statement.names]
    if isinstance(statement, ast.ImportFrom) and statement.level == 0 and statement.module:
        return [statement.module] + [f"{statement.module}.{a.name}" for a in statement.names]
    return []


def _upstream_offered(
    config: ExperimentConfig, settings: MasterConfig, agents: Iterable[OfferedFrameworks]
) -> bool:
    """Whether the experiment's trials may find Determined's own package: an agent of its pool
    has it, or none can say (an image, a pool of another kind, no agent connected yet, an
    agent from before agents said)."""
    if trial_image(config) is not None:
        return True
    pool = config.resources.resource_pool or settings.default_compute_pool
    pool_config = settings.pool(pool)
    if pool_config is not None and pool_config.type != "agents":
        return True
    offered = [a.frameworks for a in agents if a.pool == pool]
    return not offered or any(said.get("determined", True) for said in offered)


def framework_problem(
    config: ExperimentConfig,
    settings: MasterConfig,
    needs: ScriptImports | None,
    agents: Iterable[OfferedFrameworks],
) -> None:
    """Raise :class:`InvalidConfig` (one line) when the script imports a framework that the
    connected agents of the experiment's pool all said they cannot import, or when a
    TFKerasTrial class is given several slots."""
    if needs is not None and needs.unprovided and not _upstream_offered(config, settings, agents):
        module = needs.unprovided[0]
        pool = config.resources.resource_pool or settings.default_compute_pool
        message = (
            f"{needs.script} imports {module}, which assay's determined package does not have "
            f"(it has {PROVIDED}), and no connected agent of resource pool {pool!r} has "
            f"Determined's own package to find it in: install it where the agents run "
            f"(`{FRAMEWORKS['determined']}`) and restart them; see docs/determined.md"
        )
        raise InvalidConfig(
            f"invalid experiment config: entrypoint: {message}",
            [ErrorDetail("entrypoint", message)],
        )
    slots = config.resources.slots_per_trial
    keras_trial = needs is not None and "determined.keras" in needs.apis
    if keras_trial and is_trial_class(config.entrypoint) and slots > 1:
        assert needs is not None
        message = (
            f"{needs.script} imports determined.keras, and assay trains a TFKerasTrial on one "
            f"slot (Determined trained several with Horovod), not {slots}; set "
            "resources.slots_per_trial: 1"
        )
        raise InvalidConfig(
            f"invalid experiment config: resources.slots_per_trial: {message}",
            [ErrorDetail("resources.slots_per_trial", message)],
        )
    if needs is None or not needs.frameworks or trial_image(config) is not None:
        return
    pool = config.resources.resource_pool or settings.default_compute_pool
    pool_config = settings.pool(pool)
    if pool_config is not None and pool_config.type != "agents":
        return  # Slurm's nodes and Kubernetes' pods run a Python of their own
    offered = [a.frameworks for a in agents if a.pool == pool]
    if not offered:
        return  # no agent to ask: the ones to come may have it
    for module in needs.frameworks:
        if any(said.get(module, True) for said in offered):
            continue
        count = len(offered)
        message = (
            f"{needs.script} imports {module}, which none of the {count} connected "
            f"agent{'s' if count > 1 else ''} of resource pool {pool!r} can import; install it "
            f"where the agents run (`{FRAMEWORKS[module]}`) and restart them (a cluster of "
            "`assay up`: `assay down`, then `assay up`), or submit to a pool that has it"
        )
        raise InvalidConfig(
            f"invalid experiment config: entrypoint: {message}",
            [ErrorDetail("entrypoint", message)],
        )
