"""What ``assay up`` was told: kept for the running cluster (``run/cluster.json``, which a
second ``up`` checks its options against) and for the next ``up`` (``make run PORT=19501``,
``assay down``, ``assay up`` brings the cluster back where it was, on the same database).

Every option of ``up`` defines the cluster it starts: the port (where clients and the web UI
find it), the database (where its experiments are: the default SQLite would show none of them),
the master config (its pools and storage), the local agent's slots, TLS (the URL's scheme) and
the allowed host names. So a bare ``up`` reuses each option the last ``up`` that brought a
master up was given; an option given now replaces the kept one, and ``--defaults`` forgets
them all. The file lives in ``ASSAY_HOME`` (not ``run/``, which ``down`` clears), readable by
its owner only, since a database URL may hold a password.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

from assay.cli._home import cluster_file
from assay.files import write_private

OPTIONS_FILE = "up-options.json"


@dataclass(frozen=True)
class UpOptions:
    """The options of one ``assay up`` (None and empty: not given)."""

    port: int | None = None
    slots: int | None = None
    config: str | None = None
    db: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None
    allowed_host: tuple[str, ...] = ()

    @classmethod
    def given(
        cls,
        *,
        port: int | None,
        slots: int | None,
        config: Path | None,
        db: str | None,
        tls_cert: Path | None,
        tls_key: Path | None,
        allowed_host: list[str] | None,
    ) -> UpOptions:
        """The options as typed, paths made absolute: the next ``up`` may run elsewhere."""

        def absolute(path: Path | None) -> str | None:
            return str(path.expanduser().resolve()) if path is not None else None

        return cls(
            port=port,
            slots=slots,
            config=absolute(config),
            db=db,
            tls_cert=absolute(tls_cert),
            tls_key=absolute(tls_key),
            allowed_host=tuple(allowed_host or ()),
        )

    def over(self, kept: UpOptions) -> UpOptions:
        """These options, with ``kept``'s standing in for each one not given."""
        taken: dict[str, Any] = {}
        for item in fields(self):
            mine = getattr(self, item.name)
            if mine is None or mine == ():
                taken[item.name] = getattr(kept, item.name)
        return replace(self, **taken)

    def reused(self, given: UpOptions) -> list[str]:
        """The options these hold that ``given`` did not: as a command line would say them
        (a database URL, which may hold a password, only as ``--db (kept)``)."""
        said = []
        for item in fields(self):
            value = getattr(self, item.name)
            if value is None or value == () or getattr(given, item.name) not in (None, ()):
                continue
            flag = "--" + item.name.replace("_", "-")
            if item.name == "db":
                said.append(f"{flag} (kept)")
            elif isinstance(value, tuple):
                said += [f"{flag} {v}" for v in value]
            else:
                said.append(f"{flag} {value}")
        return said

    @property
    def config_path(self) -> Path | None:
        return Path(self.config) if self.config is not None else None

    @property
    def cert_path(self) -> Path | None:
        return Path(self.tls_cert) if self.tls_cert is not None else None

    @property
    def key_path(self) -> Path | None:
        return Path(self.tls_key) if self.tls_key is not None else None


def _path(home: Path) -> Path:
    return home / OPTIONS_FILE


def _read(home: Path) -> dict[str, Any]:
    with contextlib.suppress(OSError, ValueError):
        found = json.loads(_path(home).read_text())
        if isinstance(found, dict):
            return found
    return {}


def kept_options(home: Path) -> UpOptions:
    """The options the last ``up`` of ``home`` kept; none when it kept none (or the file is
    not one this version wrote: each value is taken only when it has its type)."""
    raw = _read(home).get("options")
    if not isinstance(raw, dict):
        return UpOptions()
    kept: dict[str, Any] = {}
    for name in ("port", "slots"):
        value = raw.get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            kept[name] = value
    for name in ("config", "db", "tls_cert", "tls_key"):
        if isinstance(raw.get(name), str):
            kept[name] = raw[name]
    hosts = raw.get("allowed_host")
    if isinstance(hosts, list) and all(isinstance(h, str) for h in hosts):
        kept["allowed_host"] = tuple(hosts)
    return UpOptions(**kept)


def keep_options(home: Path, options: UpOptions, url: str) -> None:
    """Keep ``options`` for the next ``up``, with the URL its master answered at."""
    data = {"options": {**asdict(options), "allowed_host": list(options.allowed_host)}}
    write_private(_path(home), json.dumps({**data, "master": url}, indent=2) + "\n")


def kept_master(home: Path) -> str | None:
    """The URL of the master the last ``up`` of ``home`` started (it may be down now)."""
    url = _read(home).get("master")
    return url if isinstance(url, str) and url else None


def running_record() -> dict[str, Any]:
    """What the running cluster was started with (``cluster.json``): its URL, and the options
    a second ``up`` could not apply without restarting it."""
    try:
        found = json.loads(cluster_file().read_text())
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def config_text(config: Path | None) -> str | None:
    return str(config.resolve()) if config is not None else None


def digest(db: str | None) -> str | None:
    """The database URL as kept in ``cluster.json``: compared, never shown (it may hold a
    password)."""
    return hashlib.sha256(db.encode()).hexdigest() if db is not None else None


def ignored_option(
    home: Path, record: dict[str, Any], config: Path | None, db: str | None, slots: int | None
) -> str | None:
    """Why ``up`` with these options cannot keep the cluster that is up (the options it was
    started with, ``record``): it would ignore them. ``slots`` is given only when the local
    agent runs (else ``up`` starts one with them). A key the record lacks (a cluster started
    by an older ``up``) is not compared."""
    again = "`assay down` first to start it with"
    had = record.get("slots")
    if slots is not None and isinstance(had, int) and had != slots:
        noun = "slot" if had == 1 else "slots"
        return f"the cluster in {home} is up with {had} {noun}; {again} {slots}"
    if db is not None and "db" in record and record["db"] != digest(db):
        other = "another database" if record["db"] else "the default database (SQLite in it)"
        return f"the cluster in {home} is up with {other}; {again} this --db"
    if config is not None and "config" in record and record["config"] != config_text(config):
        other = f"the config {record['config']}" if record["config"] else "no --config"
        return f"the cluster in {home} is up with {other}; {again} {config}"
    return None
