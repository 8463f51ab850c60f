"""Runs in the NNI environment (not assay's): one B1 or B3 measurement, printed as JSON.

A local-mode NNI experiment (its manager and the trial processes on this machine), started
through NNI's Python API; the clock runs from ``start()`` returning (the manager is up) to the
status turning DONE, polled every 50 ms. Every trial is a fresh process, as NNI runs them.
B1: ``--slots`` concurrent trials that sleep and report a final result.
B3: as many concurrent trials as trials, each reporting ``--rows`` intermediate results as fast
as it can, then its final one; the rows are counted back from the manager.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import tempfile
import time
from pathlib import Path

from nni.experiment import Experiment

TRIAL = """
import sys, time
import nni
nni.get_next_parameter()
figure, amount = sys.argv[1], float(sys.argv[2])
if figure == "b1":
    time.sleep(amount)
else:
    for step in range(1, int(amount) + 1):
        nni.report_intermediate_result(1.0 / step)
nni.report_final_result(1.0)
"""


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run(figure: str, trials: int, concurrency: int, amount: float) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        code = Path(tmp) / "code"
        code.mkdir()
        (code / "trial.py").write_text(TRIAL)
        exp = Experiment("local")
        exp.config.experiment_working_directory = str(Path(tmp) / "nni-experiments")
        exp.config.trial_command = f"{sys.executable} trial.py {figure} {amount}"
        exp.config.trial_code_directory = str(code)
        exp.config.search_space = {"x": {"_type": "uniform", "_value": [0.0, 1.0]}}
        exp.config.tuner.name = "Random"
        exp.config.max_trial_number = trials
        exp.config.trial_concurrency = concurrency
        exp.start(_port())
        try:
            start = time.perf_counter()
            while exp.get_status() not in ("DONE", "STOPPED", "ERROR"):
                time.sleep(0.05)
            wall = time.perf_counter() - start
            status = exp.get_status()
            jobs = exp.list_trial_jobs()
            failed = [j for j in jobs if j.status != "SUCCEEDED"]
            if status == "ERROR" or failed:
                states = [j.status for j in failed]
                raise RuntimeError(f"NNI experiment {status}; trials not succeeded: {states}")
            rows = sum(len(m) for m in exp.get_job_metrics().values())
        finally:
            exp.stop()
    return {"wall": wall, "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("figure", choices=["b1", "b3"])
    parser.add_argument("--trials", type=int, required=True)
    parser.add_argument("--sleep", type=float, default=1.0)
    parser.add_argument("--slots", type=int, default=2)
    parser.add_argument("--rows", type=int, default=1000)
    args = parser.parse_args()
    if args.figure == "b1":
        result = run("b1", args.trials, args.slots, args.sleep)
    else:
        result = run("b3", args.trials, args.trials, args.rows)
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
