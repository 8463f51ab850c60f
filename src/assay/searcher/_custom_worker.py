"""The subprocess that runs a user's custom searcher: ``python -m assay.searcher._custom_worker``.

It speaks JSON lines: one request on stdin, one answer on stdout. The first request is
``{"op": "start", "class": "module:Class", "context_dir": ..., "seed": ..., "hyperparameters":
..., "smaller_is_better": ..., "class_args": {...}, "settings": {...}, "state": null |
saved}`` (the class is built with ``class_args`` as keyword arguments); later ones name a
searcher event (``initial_operations``, ``trial_created``, ``validation_completed``,
``trial_closed``, ``trial_exited_early``) with its arguments. Every answer is ``{"ok": true,
"ops": [...], "state": ..., "progress": ...}`` or ``{"ok": false, "error": "<traceback>"}``.
Whatever the user's code prints goes to stderr, so it cannot corrupt the protocol.
"""

from __future__ import annotations

import importlib
import json
import os
import random
import sys
import traceback
from typing import Any, TextIO

from assay.searcher._base import rng_state, set_rng_state
from assay.searcher._custom import SearchContext
from assay.searcher._ops import Close, Create, Operation, Shutdown, ValidateAfter, op_to_json


def load_class(path: str, context_dir: str) -> type[Any]:
    """Import ``module:Class`` with the context directory first on ``sys.path``."""
    module_name, sep, class_name = path.partition(":")
    if not sep or not module_name or not class_name:
        raise ValueError(f"searcher.class must look like 'module:Class', got {path!r}")
    if context_dir not in sys.path:
        sys.path.insert(0, context_dir)
    module = importlib.import_module(module_name)
    cls = getattr(module, class_name, None)
    if cls is None:
        raise ValueError(f"module {module_name!r} has no attribute {class_name!r}")
    return cls  # type: ignore[no-any-return]


class _Session:
    def __init__(self, request: dict[str, Any]) -> None:
        cls = load_class(str(request["class"]), str(request["context_dir"]))
        self.ctx = SearchContext(
            dict(request.get("hyperparameters") or {}),
            random.Random(int(request["seed"])),
            smaller_is_better=bool(request.get("smaller_is_better", True)),
            settings=dict(request.get("settings") or {}),
        )
        self.searcher = cls(**dict(request.get("class_args") or {}))
        saved = request.get("state")
        if saved is not None:
            set_rng_state(self.ctx.rng, saved["rng"])
            load = getattr(self.searcher, "load_state", None)
            if callable(load) and saved["user"] is not None:
                load(saved["user"])

    def handle(self, request: dict[str, Any]) -> list[Operation]:
        op = request["op"]
        s, ctx = self.searcher, self.ctx
        if op == "initial_operations":
            result = s.initial_operations(ctx)
        elif op == "trial_created":
            hook = getattr(s, "on_trial_created", None)
            result = [] if hook is None else hook(ctx, request["request_id"])
        elif op == "validation_completed":
            result = s.on_validation_completed(
                ctx, request["request_id"], float(request["metric"]), int(request["length"])
            )
        elif op == "trial_closed":
            result = s.on_trial_closed(ctx, request["request_id"])
        elif op == "trial_exited_early":
            result = s.on_trial_exited_early(ctx, request["request_id"], request["reason"])
        else:
            raise ValueError(f"unknown request {op!r}")
        return _operations(op, result)

    def answer(self, ops: list[Operation]) -> dict[str, Any]:
        # progress and save_state are optional: a searcher without them reports no progress
        # and keeps no state across master restarts beyond its RNG.
        report = getattr(self.searcher, "progress", None)
        progress = float(report(self.ctx)) if callable(report) else 0.0
        save = getattr(self.searcher, "save_state", None)
        state = {"user": save() if callable(save) else None, "rng": rng_state(self.ctx.rng)}
        return {
            "ok": True,
            "ops": [op_to_json(op) for op in ops],
            "state": state,
            "progress": progress,
        }


def _operations(where: str, result: Any) -> list[Operation]:
    if result is None:
        return []
    if not isinstance(result, list | tuple):
        raise TypeError(f"{where} must return a list of operations, got {type(result).__name__}")
    ops: list[Operation] = []
    for item in result:
        if not isinstance(item, Create | ValidateAfter | Close | Shutdown):
            raise TypeError(
                f"{where} returned {item!r}; build operations with the context's helpers "
                "(ctx.create_trial, ctx.validate_after, ctx.close, ctx.shutdown)"
            )
        ops.append(item)
    return ops


def serve(stdin: TextIO, stdout: TextIO) -> None:
    session: _Session | None = None
    for line in stdin:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
            if request.get("op") == "start":
                session = _Session(request)
                answer: dict[str, Any] = session.answer([])
            elif session is None:
                raise RuntimeError("the first request must be 'start'")
            else:
                answer = session.answer(session.handle(request))
            text = json.dumps(answer, allow_nan=False)
        except Exception:
            text = json.dumps({"ok": False, "error": traceback.format_exc()})
        stdout.write(text + "\n")
        stdout.flush()


def main() -> None:
    # The protocol gets its own copy of stdout; fd 1 and sys.stdout go to stderr so that the
    # user's prints end up in the log instead of in the answers.
    protocol = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    serve(sys.stdin, protocol)


if __name__ == "__main__":
    main()
