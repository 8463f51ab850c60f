"""Determined's notebook configs (``det notebook start --config-file``) read into a
:class:`JobSpec`: one instance that runs JupyterLab through assay's launcher
(``python -m assay.notebooks``) on a port its agent reserves, under the master's proxy path,
ending itself once it has been idle for ``idle_timeout`` (as ``notebook_idle_type`` counts
idleness).

A notebook config is a command config without an entrypoint: the same ``resources``,
``environment``, ``bind_mounts`` and ``work_dir``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from assay.config._durations import Duration
from assay.config._jobload import validated
from assay.config._jobspec import PROXY_PREFIX, JobSpec, JobSpecKind
from assay.config.determined._task import (
    PYTHON_VAR,
    ServedConfig,
    find_python,
    read_config,
    task_spec,
)

NOTEBOOK_ROLE = "notebook"
NOTEBOOK_PORT = "http"
"""The label of the port JupyterLab listens on (its agent reserves it)."""
NOTEBOOK_LAUNCHER = "assay.notebooks"
_FORMAT = "determined-notebook"
_WHAT = "notebook config"


IdleTypeName = Literal["kernels_or_terminals", "kernel_connections", "activity"]
"""Determined's ``notebook_idle_type`` (what each means: :class:`assay.protocol.IdleType`)."""


class NotebookConfig(ServedConfig):
    """A Determined notebook config: a command config that runs JupyterLab."""

    runs = "a notebook runs JupyterLab, not an entrypoint (a command runs one: `assay cmd run`)"
    idle_timeout: Duration | None = None  # type: ignore[assignment]
    notebook_idle_type: IdleTypeName = "kernels_or_terminals"  # type: ignore[assignment]


def notebook_script(idle_timeout: float | None, idle_type: str) -> list[str]:
    """The instance's commands: a check that its Python has JupyterLab, then the launcher on the
    reserved port, under the proxy's path of its task."""
    python = find_python("a notebook needs Python with jupyterlab")
    # Found, not imported: importing JupyterLab costs a second of the notebook's start.
    jupyter = (
        f'"${PYTHON_VAR}" -c \'import importlib.util as u, sys; '
        'sys.exit(not u.find_spec("jupyterlab"))\' '
        '2>/dev/null || { echo "assay: jupyterlab is not '
        "installed in the Python of agent $ASSAY_AGENT_ID (or in its image); install it there "
        "(pip install 'assay[notebook]')\" >&2; exit 1; }"
    )
    run = (
        f'exec "${PYTHON_VAR}" -m {NOTEBOOK_LAUNCHER} --host "$PAI_CONTAINER_HOST_IP" '
        f'--port "$PAI_CONTAINER_HOST_{NOTEBOOK_PORT}_PORT_LIST" '
        f'--base-url "{PROXY_PREFIX}/$ASSAY_TASK_ID/" --idle-type {idle_type}'
    )
    if idle_timeout is not None:
        run += f" --idle-timeout {idle_timeout:g}"
    return [python, jupyter, run]


def load_notebook_config(
    raw_or_text: Any, *, filename: str = "", overrides: Sequence[str] = ()
) -> JobSpec:
    """The spec of a notebook config, given as parsed data or YAML text (``None``: every
    default), with ``key.path=value`` overrides applied.

    Raises :class:`~assay.errors.InvalidConfig` listing every problem.
    """
    raw, found = read_config(raw_or_text, _WHAT, filename=filename, overrides=overrides, empty={})
    cfg = validated(NotebookConfig, raw, _WHAT, found)
    idle = cfg.notebook_idle_type
    spec = task_spec(
        cfg,
        JobSpecKind.NOTEBOOK,
        notebook_script(cfg.idle_timeout, idle),
        name=cfg.description or "JupyterLab",
        role_name=NOTEBOOK_ROLE,
        ports={NOTEBOOK_PORT: 1},
        source_format=_FORMAT,
    )
    if isinstance(raw, dict) and "notebook_idle_type" in raw and cfg.idle_timeout is None:
        spec = spec.model_copy(
            update={
                "notes": [
                    *spec.notes,
                    "notebook_idle_type: counts only with idle_timeout, which is not set: the "
                    "notebook runs until it is killed",
                ]
            }
        )
    parameters = {"idle_type": idle, "idle_timeout": cfg.idle_timeout}
    return spec.model_copy(update={"parameters": parameters})
