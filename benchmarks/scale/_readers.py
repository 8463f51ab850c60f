"""Readers for B13: people watching the cluster while it works, in a process of their own (so
the simulated agents' event loop never delays what is measured).

    python -m benchmarks.scale._readers URL TOKEN SECONDS EXPERIMENT_ID OUT.json

Four threads, one per read a user's screen makes, each asking again 0.25 s after its answer:
the experiment list, one experiment's trials page, the job queue, and the live event stream
(opened, read to its first line, closed). Writes each read's latencies in seconds, and the
answers that were not 200, to OUT.json.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx

PAUSE = 0.25


def main() -> None:
    url, token, seconds, experiment, out = sys.argv[1:6]
    headers = {"Authorization": f"Bearer {token}"}
    reads: dict[str, tuple[str, str, dict[str, Any]]] = {
        "experiment list": ("GET", "/api/v1/experiments", {"limit": 100}),
        "trials page": ("GET", f"/api/v1/experiments/{experiment}/trials", {"limit": 100}),
        "job queue": ("GET", "/api/v1/jobs", {}),
        "live events": ("STREAM", "/api/v1/events", {"experiment_id": experiment}),
    }
    latencies: dict[str, list[float]] = {name: [] for name in reads}
    failures: dict[str, list[str]] = {name: [] for name in reads}
    until = time.monotonic() + float(seconds)

    def read(name: str) -> None:
        method, path, params = reads[name]
        with httpx.Client(base_url=url, headers=headers, timeout=60) as http:
            while time.monotonic() < until:
                began = time.perf_counter()
                try:
                    if method == "STREAM":
                        with http.stream("GET", path, params=params) as answer:
                            status = answer.status_code
                            for _ in answer.iter_lines():
                                break
                    else:
                        status = http.get(path, params=params).status_code
                except httpx.HTTPError as exc:
                    failures[name].append(type(exc).__name__)
                else:
                    if status == 200:
                        latencies[name].append(time.perf_counter() - began)
                    else:
                        failures[name].append(str(status))
                time.sleep(PAUSE)

    threads = [threading.Thread(target=read, args=(name,)) for name in reads]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    Path(out).write_text(json.dumps({"latencies": latencies, "failures": failures}))


if __name__ == "__main__":
    main()
