"""B4, measured inside a real trial: what reporting costs the training loop."""

import json
import statistics
import time

import assay

STEP_SECONDS = 0.010


def spin(seconds: float) -> None:
    # A step that holds the interpreter, as pure-Python work does: the reporter thread must
    # win the GIL from it, which is the worst case for the overhead.
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def run_steps(core: assay.core.Context, report: bool, offset: int) -> float:
    start = time.perf_counter()
    for i in range(STEPS):
        spin(STEP_SECONDS)
        if report:
            core.train.report_training_metrics(offset + i + 1, {"loss": 1.0 / (i + 1), "lr": 0.1})
    return time.perf_counter() - start


with assay.core.init() as core:
    # The benchmark's quick mode asks for a smaller run through the hyperparameters.
    size = core.info.trial.hparams if core.info and core.info.trial else {}
    CALLS = int(size.get("calls", 20_000))
    STEPS = int(size.get("steps", 200))
    REPEATS = int(size.get("repeats", 5))
    metrics = {"loss": 0.5, "accuracy": 0.9, "lr": 0.01}
    call_costs = []
    step = 10_000_000
    for _ in range(REPEATS):
        start = time.perf_counter()
        for _ in range(CALLS):
            step += 1
            core.train.report_training_metrics(step, metrics)
        call_costs.append((time.perf_counter() - start) / CALLS)
        core.train._flush()
    overheads = []
    offset = 0
    for _ in range(REPEATS):
        base = run_steps(core, report=False, offset=0)
        offset += 100_000
        with_reports = run_steps(core, report=True, offset=offset)
        overheads.append(with_reports / base - 1.0)
    flush_start = time.perf_counter()
    core.train._flush()
    flush = time.perf_counter() - flush_start
    print(
        "B4RESULT "
        + json.dumps(
            {
                "call_us": [c * 1e6 for c in call_costs],
                "overhead": overheads,
                "reports": CALLS * REPEATS + STEPS * REPEATS,
                "final_flush_s": flush,
                "median_call_us": statistics.median(call_costs) * 1e6,
            }
        ),
        flush=True,
    )
