"""The agent's zygote: each trial it forks is a fresh process that looks, to the trial and to
the agent, like ``python3 SCRIPT`` started through the shell; what it cannot be runs that way."""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import re
import signal
import subprocess
import sys
import time
import zipfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from assay.agent._forking import ForkedProcess, ZygoteClient, direct_python
from assay.agent._runner import MAX_LINE, base_environment
from tests.processes import alive, children_of

REPORT = (
    "import json, os, sys\n"
    "import __main__\n"
    "print(json.dumps({'argv': sys.argv, 'cwd': os.getcwd(), 'var': os.environ.get('TRIAL_VAR'),\n"
    "    'path0': sys.path[0], 'extra': os.environ['EXTRA'] in sys.path,\n"
    "    'file': __main__.__file__, 'pgid': os.getpgid(0), 'pid': os.getpid(),\n"
    "    'ppid': os.getppid(), 'name': __name__}))\n"
    "sys.exit(3)\n"
)


def _with_zygote(body: Callable[[ZygoteClient], Awaitable[Any]]) -> Any:
    async def run() -> Any:
        zygote = ZygoteClient(base_environment, MAX_LINE)
        await zygote.start()
        try:
            return await body(zygote)
        finally:
            await zygote.close()

    return asyncio.run(run())


async def _finish(process: ForkedProcess) -> tuple[int, str, str]:
    out, err, code = await asyncio.gather(
        process.stdout.read(), process.stderr.read(), process.wait()
    )
    return code, out.decode(), err.decode()


def test_a_forked_trial_runs_its_script_with_its_own_argv_directory_environment_and_session(
    tmp_path: Path,
) -> None:
    (tmp_path / "train.py").write_text(REPORT)
    extra = tmp_path / "lib"
    extra.mkdir()
    env = base_environment()
    env["TRIAL_VAR"] = "seven"
    env["EXTRA"] = str(extra)
    env["PYTHONPATH"] = f"{extra}:{env['PYTHONPATH']}"

    async def body(zygote: ZygoteClient) -> tuple[int, int, str, str]:
        process = await zygote.spawn(["python3", "train.py", "--lr=0.1"], tmp_path, env)
        return (process.pid, *await _finish(process))

    pid, code, out, err = _with_zygote(body)
    assert code == 3, err
    seen = json.loads(out)
    assert seen["argv"] == ["train.py", "--lr=0.1"]
    assert seen["cwd"] == str(tmp_path)
    assert seen["var"] == "seven"
    assert seen["path0"] == str(tmp_path)
    assert seen["extra"] is True
    assert seen["file"] == str(tmp_path / "train.py")
    assert seen["name"] == "__main__"
    # Its own process, leading its own group (the agent signals the trial's group by its pid).
    assert seen["pid"] == pid == seen["pgid"]
    assert seen["ppid"] != os.getpid()


def test_a_forked_trial_sees_exactly_its_environment_not_the_zygotes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "train.py").write_text("import json, os\nprint(json.dumps(dict(os.environ)))\n")
    monkeypatch.setenv("ZYGOTE_ONLY", "the zygote has it")
    monkeypatch.setenv("CHANGED", "the zygote's value")
    env = {k: v for k, v in base_environment().items() if k != "ZYGOTE_ONLY"}
    env["CHANGED"] = "the trial's value"
    env["TRIAL_ONLY"] = "the trial has it"

    async def body(zygote: ZygoteClient) -> tuple[int, str, str]:
        assert direct_python("python3 train.py", tmp_path) is not None
        return await _finish(await zygote.spawn(["python3", "train.py"], tmp_path, env))

    code, out, err = _with_zygote(body)
    assert code == 0, err
    assert json.loads(out) == env


def test_an_uncaught_exception_ends_with_code_1_and_a_traceback_from_the_script(
    tmp_path: Path,
) -> None:
    (tmp_path / "train.py").write_text("def f():\n    raise ValueError('bad lr')\nf()\n")

    async def body(zygote: ZygoteClient) -> tuple[int, str, str]:
        return await _finish(await zygote.spawn(["python3", "train.py"], tmp_path, env))

    env = base_environment()
    code, _, err = _with_zygote(body)
    assert code == 1
    lines = err.splitlines()
    assert lines[0] == "Traceback (most recent call last):"
    assert lines[1].startswith(f'  File "{tmp_path / "train.py"}", line 3, in <module>')
    assert lines[-1] == "ValueError: bad lr"
    assert "zygote" not in err


ENDING = """\
import atexit, gzip, sys, threading, time, zipfile
import helper

log = open("log.txt", "w")
log.write("written, never closed\\n")
packed = gzip.open("data.gz", "wt")
packed.write("compressed, never closed\\n")
archive = zipfile.ZipFile("files.zip", "w")
archive.writestr("inside.txt", "zipped, never closed")
helper.keep("helper.txt")

def late():
    time.sleep(0.3)
    open("thread.txt", "w").write("joined\\n")

def chatty():
    while True:
        time.sleep(0.001)
        log.name  # a global the shutdown clears: no traceback may come of it

threading.Thread(target=late).start()
threading.Thread(target=chatty, daemon=True).start()
atexit.register(lambda: print("atexit ran", flush=True))
print("buffered to a pipe")
sys.exit("bad ending")
"""

HELPER = """\
kept = []
def keep(name):
    f = open(name, "w")
    f.write("held by an imported module\\n")
    kept.append(f)
"""


def test_a_forked_trial_ends_as_the_interpreter_would_with_its_open_files_written(
    tmp_path: Path,
) -> None:
    # Its shutdown skips tearing down what the zygote holds; what the trial made is finalized.
    (tmp_path / "train.py").write_text(ENDING)
    (tmp_path / "helper.py").write_text(HELPER)

    async def body(zygote: ZygoteClient) -> tuple[int, str, str]:
        return await _finish(await zygote.spawn(["python3", "train.py"], tmp_path, env))

    env = base_environment()
    code, out, err = _with_zygote(body)
    assert (code, err) == (1, "bad ending\n")
    assert out in {"atexit ran\nbuffered to a pipe\n", "buffered to a pipe\natexit ran\n"}
    assert (tmp_path / "log.txt").read_text() == "written, never closed\n"
    with gzip.open(tmp_path / "data.gz", "rt") as f:
        assert f.read() == "compressed, never closed\n"
    with zipfile.ZipFile(tmp_path / "files.zip") as z:
        assert z.read("inside.txt") == b"zipped, never closed"
    assert (tmp_path / "helper.txt").read_text() == "held by an imported module\n"
    assert (tmp_path / "thread.txt").read_text() == "joined\n"


# A stdout of the trial's own, with no ``closed`` and a flush that may fail.
OWN_STDOUT = """\
import sys
class Out:
    def write(self, text):
        return len(text)
    def flush(self):
        {flush}
sys.stdout = Out()
"""


@pytest.mark.parametrize(
    ("ending", "status", "stderr"),
    [
        ("pass", 0, ""),
        ("import sys; sys.exit()", 0, ""),
        ("import sys; sys.exit(7)", 7, ""),
        ("import sys; sys.exit(256 + 5)", 5, ""),
        ("raise SystemExit(None)", 0, ""),
        ("raise SystemExit(['a', 1])", 1, "['a', 1]\n"),
        (OWN_STDOUT.format(flush="pass") + "print('x')", 0, ""),
        (OWN_STDOUT.format(flush="raise OSError('gone')") + "sys.exit(3)", 120, "OSError: gone"),
    ],
)
def test_a_forked_trial_exits_with_the_status_the_interpreter_gives(
    tmp_path: Path, ending: str, status: int, stderr: str
) -> None:
    (tmp_path / "train.py").write_text(ending + "\n")

    async def body(zygote: ZygoteClient) -> tuple[int, str, str]:
        return await _finish(await zygote.spawn(["python3", "train.py"], tmp_path, env))

    env = base_environment()
    code, _, err = _with_zygote(body)
    plain = subprocess.run(
        [sys.executable, "train.py"], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    # Alike but for the address in an object's repr.
    same = re.compile(r" at 0x[0-9a-f]+")
    assert (code, same.sub("", err)) == (plain.returncode, same.sub("", plain.stderr))
    assert code == status and stderr in err


ENDINGS = {
    "an uncaught KeyboardInterrupt": """\
import atexit
f = open("kept.txt", "w")
f.write("checkpoint\\n")
atexit.register(lambda: print("atexit ran"))
raise KeyboardInterrupt
""",
    "stdout replaced by a logger": """\
import sys
class Logger:
    def __init__(self, name):
        self.terminal = sys.stdout
        self.log = open(name, "w")
    def write(self, text):
        self.terminal.write(text)
        self.log.write(text)
    def flush(self):
        pass
sys.stdout = Logger("kept.txt")
print("epoch 1 loss 0.5")
""",
    "a flush that needs the script's globals": """\
import os, sys
class Tee:
    def __init__(self):
        self.out = sys.stdout
        self.f = open("kept.txt", "w")
    def write(self, text):
        self.out.write(text)
        self.f.write(text)
    def flush(self):
        self.out.flush()
        self.f.flush()
        os.fsync(self.f.fileno())
sys.stdout = Tee()
print("hi")
""",
    "C's stdio": """\
import ctypes
ctypes.CDLL(None).printf(b"from C\\n")
""",
    "a syntax error": "x = (\n",
}


@pytest.mark.parametrize("script", ENDINGS.values(), ids=ENDINGS.keys())
def test_a_forked_trial_ends_as_python3_does(tmp_path: Path, script: str) -> None:
    plain, forked = tmp_path / "plain", tmp_path / "forked"
    for where in (plain, forked):
        where.mkdir()
        (where / "train.py").write_text(script)
    env = base_environment()

    async def body(zygote: ZygoteClient) -> tuple[int, str, str]:
        return await _finish(await zygote.spawn(["python3", "train.py"], forked, env))

    code, out, err = _with_zygote(body)
    ran = subprocess.run(
        [sys.executable, "train.py"],
        cwd=plain,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert (code, out) == (ran.returncode, ran.stdout), err
    # Alike but for the directory and the addresses in reprs.
    assert _plain(err, forked) == _plain(ran.stderr, plain)
    kept = {p.name: p.read_text() for p in plain.iterdir()}
    assert {p.name: p.read_text() for p in forked.iterdir()} == kept


def _plain(text: str, where: Path) -> str:
    return re.sub(r" at 0x[0-9a-f]+", "", text.replace(str(where), "DIR"))


def test_a_trial_whose_python3_is_another_interpreter_runs_that_one(tmp_path: Path) -> None:
    other = tmp_path / "bin"
    other.mkdir()
    (other / "python3").write_text('#!/bin/sh\necho "other python ran $@"\n')
    (other / "python3").chmod(0o755)
    (tmp_path / "train.py").write_text("print('the zygote ran it')\n")
    env = base_environment()
    env["PATH"] = f"{other}:{env['PATH']}"

    async def body(zygote: ZygoteClient) -> tuple[int, str, str]:
        return await _finish(await zygote.spawn(["python3", "train.py", "x"], tmp_path, env))

    code, out, _ = _with_zygote(body)
    assert (code, out) == (0, "other python ran train.py x\n")


def test_a_trial_that_sets_a_startup_variable_starts_the_ordinary_way(tmp_path: Path) -> None:
    # A fresh interpreter reads PYTHONHASHSEED at start; the zygote's children share its own.
    (tmp_path / "train.py").write_text("print(hash('assay'))\n")
    env = base_environment()
    env["PYTHONHASHSEED"] = "123"

    async def body(zygote: ZygoteClient) -> tuple[int, str, str]:
        return await _finish(await zygote.spawn(["python3", "train.py"], tmp_path, env))

    code, out, err = _with_zygote(body)
    expected = subprocess.run(
        [sys.executable, "-c", "print(hash('assay'))"],
        env={**os.environ, "PYTHONHASHSEED": "123"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert (code, out) == (0, expected), err


def test_a_signal_to_the_trials_group_ends_it_as_that_signal(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("import time\nprint('up', flush=True)\ntime.sleep(60)\n")

    async def body(zygote: ZygoteClient) -> int:
        process = await zygote.spawn(["python3", "train.py"], tmp_path, base_environment())
        assert await process.stdout.readline() == b"up\n"
        os.killpg(process.pid, signal.SIGTERM)
        return await process.wait()

    assert _with_zygote(body) == -signal.SIGTERM


def test_the_next_trials_child_waits_forked_and_one_killed_waiting_is_replaced(
    tmp_path: Path,
) -> None:
    (tmp_path / "train.py").write_text(REPORT)

    async def run() -> tuple[int, list[int], int, dict[str, Any], list[int]]:
        zygote = ZygoteClient(base_environment, MAX_LINE)
        await zygote.start()
        assert zygote._proc is not None
        zygote_pid = zygote._proc.pid
        deadline = time.monotonic() + 10
        while not (waiting := children_of(zygote_pid)) and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        assert len(waiting) == 1, "one child forked ahead of the first request"
        os.kill(waiting[0], signal.SIGKILL)
        # Dead before the request comes (one killed during the hand-over is the trial's death).
        while alive(waiting[0]) and time.monotonic() < deadline + 10:
            await asyncio.sleep(0.01)
        env = {**base_environment(), "EXTRA": str(tmp_path)}
        process = await zygote.spawn(["python3", "train.py"], tmp_path, env)
        code, out, _ = await _finish(process)
        report = json.loads(out)
        spare = [p for p in children_of(zygote_pid) if p != process.pid]
        await zygote.close()
        return code, waiting, process.pid, report, spare

    code, killed, pid, report, spare = asyncio.run(run())
    assert code == 3 and report["pid"] == pid and pid not in killed
    assert len(spare) == 1, "the next request's child is forked already"
    deadline = time.monotonic() + 10
    while alive(spare[0]) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not alive(spare[0]), "the zygote's end ends the child that waited"


def test_the_zygotes_end_ends_its_trials(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("import time\nprint('up', flush=True)\ntime.sleep(60)\n")

    async def run() -> tuple[int, int]:
        zygote = ZygoteClient(base_environment, MAX_LINE)
        process = await zygote.spawn(["python3", "train.py"], tmp_path, base_environment())
        assert await process.stdout.readline() == b"up\n"
        await zygote.close()
        # The child is not ours to wait for: its end shows as its output closing.
        await asyncio.wait_for(process.stdout.read(), 30)
        return process.pid, await process.wait()

    pid, code = asyncio.run(run())
    assert code == -signal.SIGKILL
    # Gone, or a zombie left for init to reap. A killed process closes its files before the
    # kernel marks it a zombie, so its output can close while it still shows as running.
    stat = Path(f"/proc/{pid}/stat")

    def ended() -> bool:
        try:
            return stat.read_text().rsplit(")", 1)[1].split()[0] == "Z"
        except FileNotFoundError:
            return True

    deadline = time.monotonic() + 5
    while not ended() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert ended()


@pytest.mark.parametrize(
    ("entrypoint", "argv"),
    [
        ("python3 train.py", ["python3", "train.py"]),
        (
            "python train.py --lr=0.1 --epochs 3",
            ["python", "train.py", "--lr=0.1", "--epochs", "3"],
        ),
        (["python3.11", "train.py", "a b"], ["python3.11", "train.py", "a b"]),
        ("python3 -m trainer", None),
        ("python3 train.py && echo done", None),
        ("python3 train.py > out.txt", None),
        ("FOO=1 python3 train.py", None),
        ("python3 train.py --name 'a b'", None),
        ("bash run.sh", None),
        ("python3", None),
        ("model_def:Trial", None),
    ],
)
def test_only_a_plain_python_script_entrypoint_is_forked(
    tmp_path: Path, entrypoint: str | list[str], argv: list[str] | None
) -> None:
    assert direct_python(entrypoint, tmp_path) == argv


def test_an_entrypoint_with_a_startup_hook_is_not_forked(tmp_path: Path) -> None:
    (tmp_path / "startup-hook.sh").write_text("export X=1\n")
    assert direct_python("python3 train.py", tmp_path) is None
