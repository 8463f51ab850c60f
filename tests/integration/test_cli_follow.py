"""`--follow` as a user lives it: through a master restart, piped into a CI log, re-attached
after Ctrl-C with `assay experiment follow`, and live in a terminal (tmux) as a person sees it."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.integration.cluster import CONTEXTS, ROOT, Cluster, wait_for
from tests.integration.test_recovery import random_config

pytestmark = pytest.mark.integration

CLI = [sys.executable, "-c", "from assay.cli import main; main()"]


def counter_config(tmp_path: Path, *, trials: int, steps: int, step_seconds: float) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(random_config(trials, steps, step_seconds))
    return path


def start_cli(cluster: Cluster, *args: str) -> subprocess.Popen[str]:
    """``assay ARGS`` with stdout and stderr piped (not a terminal, as in CI)."""
    return subprocess.Popen(
        [*CLI, *args],
        env=cluster.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )


def finish(proc: subprocess.Popen[str], timeout: float = 120) -> tuple[int, str, str]:
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, out, err


def test_follow_and_log_follow_ride_through_a_master_restart_to_the_real_end(
    cluster: Cluster, tmp_path: Path
) -> None:
    config = counter_config(tmp_path, trials=2, steps=80, step_seconds=0.05)
    proc = start_cli(cluster, "e", "create", str(config), str(CONTEXTS / "counter"), "-f")
    logs: subprocess.Popen[str] | None = None
    first_line = ""
    try:
        wait_for(
            "both trials training",
            lambda: (
                len(ts := cluster.client.trials(1)) == 2
                and all(t.steps_completed >= 10 for t in ts)
            ),
        )
        logs = start_cli(cluster, "t", "logs", "1", "-f")
        wait_for("the trial's first log lines", lambda: cluster.trial_logs(1))
        # Its first line read: the follow is under way (on a loaded machine the command can
        # take longer to start than any fixed wait, and would meet no master at all).
        assert logs.stdout is not None
        first_line = logs.stdout.readline()
        cluster.kill_master()
        time.sleep(1.0)  # the follows meet a closed port, then a master starting
        cluster.start_master()
    finally:
        code, out, err = finish(proc)
        logs_done = finish(logs) if logs is not None else None
    assert logs_done is not None
    logs_code, logs_rest, logs_err = logs_done
    logs_out = first_line + logs_rest
    # The trial's log, followed across the restart: every line once, in order.
    assert logs_code == 0, logs_out + logs_err
    assert logs_out.splitlines() == cluster.trial_logs(1), logs_out
    assert f"reconnected to the master at {cluster.url}" in logs_err
    assert code == 0, out + err
    assert f"master unreachable at {cluster.url}" in err
    assert f"reconnected to the master at {cluster.url}" in err
    assert "Traceback" not in err
    exp = cluster.client.experiment(1)
    assert exp.state == "COMPLETED"
    assert "experiment 1 ended COMPLETED" in out
    lines = out.splitlines()
    for trial in cluster.client.trials(1):
        # Each change shows once: nothing repeated after the reconnection.
        assert lines.count(f"trial {trial.id} COMPLETED after 80 steps; best loss "
                           f"{trial.best_validation:.6g}") == 1, out  # fmt: skip
    assert any(line.startswith("experiment 1 COMPLETED 100%: trials 2 completed") for line in lines)


def test_follow_without_the_master_back_gives_up_naming_the_command_that_resumes(
    cluster: Cluster, tmp_path: Path
) -> None:
    exp_id = cluster.submit(
        counter_config(tmp_path, trials=1, steps=400, step_seconds=0.05).read_text()
    )
    proc = subprocess.Popen(
        [*CLI, "e", "follow", str(exp_id)],
        env={**cluster.env, "ASSAY_FOLLOW_PATIENCE": "2"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert proc.stdout is not None
    first = proc.stdout.readline()  # following now
    assert first.startswith(f"experiment {exp_id} ") or first.startswith("trial "), first
    cluster.kill_master()
    code, out, err = finish(proc, timeout=60)
    assert code == 1, out + err
    assert f"master unreachable at {cluster.url}" in err
    assert "gave up following" in err
    assert f"`assay experiment follow {exp_id}` takes it up again" in err
    assert "Traceback" not in err


def test_piped_follow_prints_progress_as_it_happens_and_ctrl_c_then_follow_reattaches(
    cluster: Cluster, tmp_path: Path
) -> None:
    exp_id = cluster.submit(
        counter_config(tmp_path, trials=2, steps=60, step_seconds=0.05).read_text()
    )
    proc = start_cli(cluster, "experiment", "follow", str(exp_id))
    assert proc.stdout is not None
    seen = []
    while not any(line.startswith("trial ") for line in seen):
        line = proc.stdout.readline()
        assert line, f"the follow ended before any trial line: {seen}"
        seen.append(line.rstrip("\n"))
    # A trial line came while the experiment runs: progress is not held back to the end.
    assert not cluster.client.experiment(exp_id).state.terminal, seen
    proc.send_signal(signal.SIGINT)
    code, out, err = finish(proc, timeout=30)
    assert code == 130, out + err
    assert f"detached; experiment {exp_id} keeps running" in err
    assert f"`assay experiment follow {exp_id}` re-attaches" in err
    assert "Traceback" not in err and "Aborted" not in err

    again = cluster.cli("experiment", "follow", str(exp_id), timeout=120)
    assert again.returncode == 0, again.stdout + again.stderr
    lines = again.stdout.splitlines()
    trials = cluster.client.trials(exp_id)
    assert len(trials) == 2
    for t in trials:
        assert any(line.startswith(f"trial {t.id} COMPLETED after 60 steps") for line in lines)
    assert f"experiment {exp_id} ended COMPLETED" in again.stdout
    assert "best trial:" in again.stdout
    assert all(len(line) < 400 for line in lines)

    # On an ended experiment: its end at once, as JSON lines with --json.
    done = cluster.cli("e", "follow", str(exp_id), "--json", check=True)
    (last,) = [json.loads(line) for line in done.stdout.splitlines()]
    assert last["state"] == "COMPLETED" and last["id"] == exp_id

    missing = cluster.cli("e", "follow", "999")
    assert missing.returncode == 1 and "Traceback" not in missing.stderr
    assert "999" in missing.stderr and len(missing.stderr.strip().splitlines()) == 1


class Tmux:
    """A terminal a person would look at: a tmux server of its own, one 120x40 window."""

    def __init__(self, tmp_path: Path, env: dict[str, str]) -> None:
        self.socket = str(tmp_path / "tmux.sock")
        self.env = env

    def run(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-S", self.socket, *args],
            env=self.env,
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        )
        return done.stdout

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", "follow")


def tmux_or_skip() -> None:
    if shutil.which("tmux") is not None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail("tmux is not installed (the CI script installs it)")
    pytest.skip("tmux is not installed: the live display cannot be seen as a person sees it")


def test_live_display_in_a_terminal_shows_trial_rows_rides_a_restart_then_the_summary(
    cluster: Cluster, tmp_path: Path
) -> None:
    tmux_or_skip()
    config = counter_config(tmp_path, trials=2, steps=60, step_seconds=0.05)
    env = {k: v for k, v in cluster.env.items() if k not in ("COLUMNS", "LINES", "NO_COLOR")}
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    command = " ".join(
        f"'{part}'" for part in [*CLI, "e", "create", str(config), str(CONTEXTS / "counter"), "-f"]
    )
    tmux = Tmux(tmp_path, env)
    tmux.run(
        "new-session", "-d", "-s", "follow", "-x", "120", "-y", "40",
        f"cd '{ROOT}' && {command}; echo \"exit status $?\"; sleep 600",
    )  # fmt: skip
    try:
        running = wait_for(
            "a trial row RUNNING in the live table",
            lambda: (s := tmux.screen()) and " RUNNING " in s and "Trial" in s and s,
            timeout=60,
            interval=0.2,
        )
        wait_for("steps", lambda: any(t.steps_completed >= 10 for t in cluster.client.trials(1)))
        cluster.kill_master()
        time.sleep(1.0)
        cluster.start_master()
        ended = wait_for(
            "the final summary",
            lambda: "exit status" in (s := tmux.screen()) and s,
            timeout=120,
            interval=0.5,
        )
    finally:
        subprocess.run(["tmux", "-S", tmux.socket, "kill-server"], check=False, timeout=30)
    # Mid-run, a person sees the progress line and the table of trials with their states.
    assert "experiment 1" in running
    header = next(line for line in running.splitlines() if line.lstrip().startswith("Trial"))
    for column in ("State", "Steps", "Best loss", "Hyperparameters"):
        assert column in header, running
    # The restart is told above the view, which stays one view (not torn into two).
    assert f"master unreachable at {cluster.url}" in ended
    assert f"reconnected to the master at {cluster.url}" in ended
    lines = ended.splitlines()
    assert sum(line.lstrip().startswith("Trial ") for line in lines) == 1, ended
    assert sum(line.startswith("experiment 1 COMPLETED ━") for line in lines) == 1, ended
    # At the end: every trial COMPLETED in the table, the outcome below it, exit status 0.
    rows = [line.split() for line in lines]
    trial_ids = [t.id for t in cluster.client.trials(1)]
    for trial_id in trial_ids:
        assert any(r[:3] == [str(trial_id), "COMPLETED", "60"] for r in rows), ended
    assert "100%" in ended
    assert "experiment 1 ended COMPLETED" in ended
    assert "best trial:" in ended
    assert "exit status 0" in ended
    assert all(len(line) <= 120 for line in lines)
    assert "Traceback" not in ended
