"""A test trial that prints its secret environment variable, as careless code does, then what
it saw in a form that does not reveal it: the value's length and SHA-256, and whether the
config it was given holds the same value."""

from __future__ import annotations

import hashlib
import os
import sys

import assay


def main() -> None:
    value = os.environ.get("API_TOKEN", "")
    print(f"connecting with token {value} to the service", flush=True)
    print(f"token={value}", file=sys.stderr, flush=True)
    info = assay.get_cluster_info()
    assert info is not None and info.trial is not None
    entries = info.trial.config["environment"]["environment_variables"]["cpu"]
    given = [e["value"] for e in entries if isinstance(e, dict) and e["name"] == "API_TOKEN"]
    digest = hashlib.sha256(value.encode()).hexdigest()
    print(f"token length {len(value)} sha256 {digest}", flush=True)
    print(f"config holds the same value: {given == [value]}", flush=True)
    with assay.core.init() as core:
        for op in core.searcher.operations():
            core.train.report_validation_metrics(op.length, {"loss": 1.0})
            op.report_completed(1.0)


if __name__ == "__main__":
    main()
