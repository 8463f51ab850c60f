"""A :class:`~assay.searcher.SearchMethod` that runs a user's custom searcher in a subprocess.

The user's class (see ``assay.searcher._custom``) runs in ``python -m
assay.searcher._custom_worker`` with the experiment's context directory on ``sys.path``; the two
processes speak JSON lines over its stdin and stdout. Anything going wrong on the other side
(an exception in the user's code, a crash, a hang past ``timeout``, an answer that is not
valid) turns into one ``Shutdown(failure=True, message=...)`` carrying the traceback or the
tail of the worker's stderr: the experiment fails, the master does not.

Every answer carries the user's saved state, so :meth:`snapshot` needs no round trip. After
:meth:`restore` the worker is started afresh and loads that state before the next event.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from assay.compat import trial_pythonpath
from assay.protocol import ExitedReason
from assay.searcher import Operation, Shutdown, op_from_json

_STDERR_TAIL = 4000


class _WorkerFailed(Exception):
    """The worker cannot go on; the message is what the experiment's failure reports."""


class CustomSearchMethod:
    """Run ``class_path`` (``"module:Class"``) from ``context_dir`` as a search method."""

    def __init__(
        self,
        class_path: str,
        context_dir: Path | str,
        *,
        seed: int,
        hyperparameters: dict[str, Any],
        smaller_is_better: bool = True,
        class_args: dict[str, Any] | None = None,
        settings: dict[str, Any] | None = None,
        timeout: float = 60.0,
        python: str = sys.executable,
    ) -> None:
        self.class_path = class_path
        self.context_dir = str(Path(context_dir).resolve())
        self.seed = seed
        self.hyperparameters = hyperparameters
        self.smaller_is_better = smaller_is_better
        self.class_args = dict(class_args or {})
        self.settings = dict(settings or {})
        self.timeout = timeout
        self.python = python
        self.state: Any = None
        self.last_progress = 0.0
        self.failure: str | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._stderr: IO[bytes] | None = None
        self._buffer = b""

    # -- SearchMethod ---------------------------------------------------------------------------

    def initial_operations(self) -> list[Operation]:
        return self._call({"op": "initial_operations"})

    def trial_created(self, request_id: str) -> list[Operation]:
        return self._call({"op": "trial_created", "request_id": request_id})

    def validation_completed(self, request_id: str, metric: float, length: int) -> list[Operation]:
        return self._call(
            {
                "op": "validation_completed",
                "request_id": request_id,
                "metric": metric,
                "length": length,
            }
        )

    def trial_exited_early(self, request_id: str, reason: ExitedReason) -> list[Operation]:
        return self._call(
            {"op": "trial_exited_early", "request_id": request_id, "reason": reason.value}
        )

    def trial_closed(self, request_id: str) -> list[Operation]:
        return self._call({"op": "trial_closed", "request_id": request_id})

    def progress(self, partial: Mapping[str, float]) -> float:
        # The user's searcher says how far it is; the trials' shares are not its inputs.
        return self.last_progress

    def snapshot(self) -> dict[str, Any]:
        return {"state": self.state, "progress": self.last_progress, "failure": self.failure}

    def restore(self, state: dict[str, Any]) -> None:
        self.close()
        self.state = state.get("state")
        self.last_progress = float(state.get("progress", 0.0))
        self.failure = state.get("failure")

    def close(self) -> None:
        """Stop the worker process (the experiment ended, or its searcher is being rebuilt)."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc is not None:
            for stream in (proc.stdin, proc.stdout):
                if stream is not None:
                    stream.close()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None
        self._buffer = b""

    def __del__(self) -> None:
        self.close()

    # -- the worker -----------------------------------------------------------------------------

    def _call(self, request: dict[str, Any]) -> list[Operation]:
        if self.failure is not None:
            return []
        where = request["op"]
        try:
            if self._proc is None:
                self._start()
            answer = self._exchange(request)
            ops = [op_from_json(raw) for raw in answer["ops"]]
        except _WorkerFailed as exc:
            return self._fail(f"custom searcher {self.class_path} failed in {where}: {exc}")
        except (ValueError, KeyError, TypeError) as exc:
            return self._fail(
                f"custom searcher {self.class_path} gave an invalid answer to {where}: {exc}"
            )
        return ops

    def _fail(self, message: str) -> list[Operation]:
        self.failure = message
        self.close()
        return [Shutdown(failure=True, message=message)]

    def _start(self) -> None:
        # A file, not a pipe: a chatty user searcher must never block on a full stderr pipe.
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (closed in close())
        try:
            self._proc = subprocess.Popen(
                [self.python, "-m", "assay.searcher._custom_worker"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
                cwd=self.context_dir,
                # The shims first, as for trials: an NNI custom tuner imports nni.tuner.
                env={**os.environ, "PYTHONPATH": trial_pythonpath(os.environ.get("PYTHONPATH"))},
            )
        except OSError as exc:
            raise _WorkerFailed(f"could not start the worker process: {exc}") from exc
        self._exchange(
            {
                "op": "start",
                "class": self.class_path,
                "context_dir": self.context_dir,
                "seed": self.seed,
                "hyperparameters": self.hyperparameters,
                "smaller_is_better": self.smaller_is_better,
                "class_args": self.class_args,
                "settings": self.settings,
                "state": self.state,
            }
        )

    def _exchange(self, request: dict[str, Any]) -> dict[str, Any]:
        proc = self._proc
        assert proc is not None and proc.stdin is not None
        try:
            proc.stdin.write(json.dumps(request, allow_nan=False).encode() + b"\n")
            proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise _WorkerFailed(self._died(f"the worker stopped reading ({exc})")) from exc
        line = self._read_line()
        answer = json.loads(line)
        if not isinstance(answer, dict):
            raise ValueError(f"answer is not a JSON object: {line[:200]!r}")
        if not answer.get("ok"):
            raise _WorkerFailed("\n" + str(answer.get("error", "unknown error")))
        self.state = answer.get("state")
        self.last_progress = max(0.0, min(1.0, float(answer.get("progress", 0.0))))
        return answer

    def _read_line(self) -> str:
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        fd = proc.stdout.fileno()
        deadline = time.monotonic() + self.timeout
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            while b"\n" not in self._buffer:
                left = deadline - time.monotonic()
                if left <= 0 or not selector.select(left):
                    raise _WorkerFailed(self._died(f"no answer within {self.timeout:g} s"))
                chunk = os.read(fd, 65536)
                if not chunk:
                    raise _WorkerFailed(self._died("the worker process exited"))
                self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode("utf-8", errors="replace")

    def _died(self, what: str) -> str:
        proc = self._proc
        code = None
        if proc is not None:
            # Its stdout closed first; the exit status follows a moment later.
            try:
                code = proc.wait(timeout=2.0)
            except subprocess.TimeoutExpired:
                code = None
        tail = ""
        if self._stderr is not None:
            self._stderr.seek(0, os.SEEK_END)
            size = self._stderr.tell()
            self._stderr.seek(max(0, size - _STDERR_TAIL))
            tail = self._stderr.read().decode("utf-8", errors="replace")
        status = "" if code is None else f" (exit code {code})"
        return f"{what}{status}" + (f"; its stderr ends with:\n{tail}" if tail else "")
