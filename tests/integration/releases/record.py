"""Record what a release's master writes, for the upgrade tests (test_upgrade_from_releases):
run once at each release, and commit the file it writes.

    .venv/bin/python tests/integration/releases/record.py

It runs a real master and agent of this version on SQLite and leaves their database as a user
would: a user with an access token; an adaptive ASHA search paused mid-way (trials completed,
stopped early, and paused with checkpoints; the searcher's snapshot and events); its job in the
queue; metrics and logs. Every table's rows, the schema revision and the checkpoint files are
written to ``releases/VERSION.json.gz``.
"""

from __future__ import annotations

import base64
import gzip
import io
import json
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

import sqlalchemy as sa
import yaml

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from tests.integration.cluster import Cluster, wait_for  # noqa: E402

import assay  # noqa: E402
from assay import rest  # noqa: E402

HERE = Path(__file__).resolve().parent
MAX_TRIALS = 6

CONFIG = {
    "name": "recorded-search",
    "entrypoint": "python3 train.py",
    "hyperparameters": {
        "step_seconds": 0.03,
        "checkpoint_every": 10,
        "x": {"type": "double", "minval": 1, "maxval": 2},
    },
    "searcher": {
        "name": "adaptive_asha",
        "metric": "loss",
        "max_trials": MAX_TRIALS,
        "max_length": {"batches": 90},
        "max_concurrent_trials": 2,
        "mode": "aggressive",
    },
    "max_restarts": 0,
}


def encode(value: Any) -> Any:
    if isinstance(value, bytes):
        return {"__bytes__": base64.b64encode(value).decode()}
    return value


def dump(url: str) -> dict[str, list[dict[str, Any]]]:
    engine = sa.create_engine(url)
    meta = sa.MetaData()
    meta.reflect(engine)
    tables: dict[str, list[dict[str, Any]]] = {}
    with engine.connect() as conn:
        for table in meta.sorted_tables:
            rows = conn.execute(sa.select(table)).mappings().all()
            tables[table.name] = [{k: encode(v) for k, v in row.items()} for row in rows]
    engine.dispose()
    return tables


def checkpoint_files(home: Path) -> str:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        tar.add(home / "checkpoints", arcname="checkpoints")
    return base64.b64encode(buffer.getvalue()).decode()


def main() -> int:
    from tests.integration.cluster import CONTEXTS

    from assay.context import pack_context

    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        url = f"sqlite:///{home / 'assay.db'}"
        cluster = Cluster(home, db=url)
        cluster.start_master()
        cluster.start_agent("agent-1", slots=2)
        try:
            ann = cluster.add_user("ann")
            ann.create_token(rest.TokenCreate(description="recorded"))
            context = pack_context(CONTEXTS / "counter").data
            exp = cluster.client.create_experiment(yaml.safe_dump(CONFIG), context).id

            def mid_way() -> bool:
                trials = cluster.client.trials(exp)
                ended = [t for t in trials if t.state not in ("RUNNING", "QUEUED")]
                return len(ended) >= 2 and len(trials) >= 4

            wait_for("a search mid-way", mid_way, timeout=300)
            cluster.client.transition(exp, "pause")
            wait_for(
                "every trial stopped",
                lambda: all(t.state != "RUNNING" for t in cluster.client.trials(exp)),
                timeout=120,
            )
        finally:
            cluster.stop()
        recorded = {
            "version": assay.__version__,
            "experiment": exp,
            "max_trials": MAX_TRIALS,
            "tables": dump(url),
            "checkpoints": checkpoint_files(home),
        }
        (schema,) = recorded["tables"]["alembic_version"]
        recorded["schema"] = schema["version_num"]
    out = HERE / f"{assay.__version__}.json.gz"
    out.write_bytes(gzip.compress(json.dumps(recorded, sort_keys=True).encode(), mtime=0))
    states = [r["state"] for r in recorded["tables"]["trials"]]
    print(f"wrote {out.relative_to(ROOT)} ({out.stat().st_size} bytes): trials {states}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
