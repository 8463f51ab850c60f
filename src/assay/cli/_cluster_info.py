"""``assay agent list``, ``assay slot list``, ``assay resource-pool list`` and ``assay master
info``: what the cluster has, as Determined's commands of those names show it.

``assay agent`` and ``assay master`` also start an agent or a master; :func:`group` keeps that
(the bare command, with its options) and adds the subcommands beside it."""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable
from typing import Annotated, Any

import typer

from assay.cli._common import (
    CsvOption,
    check_formats,
    client,
    console,
    esc,
    listing_table,
    print_json,
    print_table,
    when,
)

JsonFlag = Annotated[bool, typer.Option("--json", help="machine-readable output")]


def group(run: Callable[..., None]) -> typer.Typer:
    """A command group whose bare form runs ``run`` with its options (``assay agent --slots 2``)
    and whose subcommands are added to it (``assay agent list``)."""

    def callback(ctx: typer.Context, **options: Any) -> None:
        if ctx.invoked_subcommand is None:
            run(**options)

    # Typer reads the options from the signature: ``run``'s, with the context in front. Its
    # annotations are read in ``run``'s module (``__wrapped__``).
    sig = inspect.signature(run, eval_str=True)
    ctx_param = inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    callback.__signature__ = sig.replace(  # type: ignore[attr-defined]
        parameters=[ctx_param.replace(annotation=typer.Context), *sig.parameters.values()]
    )
    callback.__annotations__ = {**run.__annotations__, "ctx": "typer.Context"}
    callback.__wrapped__ = run  # type: ignore[attr-defined]
    callback.__doc__ = run.__doc__
    sub = typer.Typer(invoke_without_command=True)
    sub.callback(invoke_without_command=True)(callback)
    return sub


def agent_list(as_json: JsonFlag = False, as_csv: CsvOption = False) -> None:
    """The agents the master knows, connected or not."""

    check_formats(as_json, as_csv)
    agents = client().agents()
    if as_json:
        print_json(agents)
        return
    table = listing_table(
        "Agent ID",
        "Pool",
        "Connected",
        "Enabled",
        "Slots",
        "Address",
        "Labels",
        "Seen",
        empty="No agents.",
    )
    for a in agents:
        table.add_row(
            esc(a.id),
            esc(a.pool),
            "yes" if a.connected else "no",
            "yes" if a.enabled else "no",
            str(len(a.slots)),
            esc(a.address),
            esc(", ".join(a.labels)),
            when(a.last_seen),
        )
    print_table(table, as_csv)


def slot_list(as_json: JsonFlag = False, as_csv: CsvOption = False) -> None:
    """Every slot of every agent: its device and whether it is in use."""

    check_formats(as_json, as_csv)
    agents = client().agents()
    rows = [
        {"agent_id": a.id, "pool": a.pool, "connected": a.connected, **s.model_dump(mode="json")}
        for a in agents
        for s in a.slots
    ]
    if as_json:
        print_json(rows)
        return
    table = listing_table(
        "Agent ID",
        "Pool",
        "Slot ID",
        "Type",
        "Device",
        "Allocated",
        "Connected",
        empty="No slots.",
    )
    for a in agents:
        for s in a.slots:
            table.add_row(
                esc(a.id),
                esc(a.pool),
                esc(s.id),
                s.type,
                esc(s.name or s.uuid),
                "yes" if s.allocated else "no",
                "yes" if a.connected else "no",
            )
    print_table(table, as_csv)


def pool_list(as_json: JsonFlag = False, as_csv: CsvOption = False) -> None:
    """The resource pools, their schedulers and what they hold."""

    check_formats(as_json, as_csv)
    pools = client().resource_pools()
    if as_json:
        print_json(pools)
        return
    table = listing_table(
        "Name",
        "Scheduler",
        "Preemption",
        "Agents",
        "Slots",
        "Description",
        empty="No resource pools.",
    )
    for p in pools:
        table.add_row(
            esc(p.name),
            p.scheduler,
            "yes" if p.preemption else "no",
            str(p.agents),
            str(p.slots),
            esc(p.description),
        )
    print_table(table, as_csv)


def master_info(as_json: JsonFlag = False) -> None:
    """The master's version, URL, database and uptime."""
    c = client()
    info = c.info()
    uptime = max(0.0, time.time() - info.started_at)
    if as_json:
        print_json(
            {**info.model_dump(mode="json"), "url": c.http.base_url, "uptime_seconds": uptime}
        )
        return
    for key, value in (
        ("version", info.version),
        ("commit", info.commit or "unknown"),
        ("url", c.http.base_url),
        ("cluster id", info.cluster_id),
        ("database", info.database),
        ("started", when(info.started_at)),
        ("uptime", _duration(uptime)),
    ):
        console.print(f"{key + ':':<12}{esc(str(value))}", highlight=False)


def master_config(as_json: JsonFlag = False) -> None:
    """The running master's effective config (defaults filled in), secrets masked."""
    config = client().master_config()
    if as_json:
        print_json(config)
        return
    import yaml

    console.print(yaml.safe_dump(config, sort_keys=False), highlight=False, markup=False, end="")


def master_logs(
    tail: Annotated[int | None, typer.Option("--tail", min=0, help="only the last N lines")] = None,
    follow: Annotated[bool, typer.Option("--follow", "-f", help="keep printing new lines")] = False,
) -> None:
    """The master's own log: its recent lines (the last 10,000 since it started)."""
    from assay.cli._common import print_log_line
    from assay.cli._logview import window

    c = client()
    lines = c.master_logs()
    for entry in window(lines, None, tail):
        print_log_line(entry.line)
    last = lines[-1].id if lines else 0
    while follow:
        time.sleep(1.0)
        for entry in c.master_logs(after=last):
            print_log_line(entry.line)
            last = entry.id


def _duration(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    return f"{days}d {hours}h {minutes}m {secs}s" if days else f"{hours}h {minutes}m {secs}s"


def _build() -> tuple[typer.Typer, typer.Typer, typer.Typer, typer.Typer]:
    from assay.cli import _backup, _cluster

    # Their help: assay.cli._app.SUBCOMMANDS.
    master = group(_cluster.master)
    master.command("info")(master_info)
    master.command("config")(master_config)
    master.command("logs")(master_logs)
    master.command("backup")(_backup.backup)
    master.command("restore")(_backup.restore)
    agent = group(_cluster.agent)
    agent.command("list")(agent_list)
    agent.command("ls", hidden=True)(agent_list)
    slot = typer.Typer(no_args_is_help=True)
    slot.command("list")(slot_list)
    slot.command("ls", hidden=True)(slot_list)
    pool = typer.Typer(no_args_is_help=True)
    pool.command("list")(pool_list)
    pool.command("ls", hidden=True)(pool_list)
    return master, agent, slot, pool


master_app, agent_app, slot_app, pool_app = _build()
