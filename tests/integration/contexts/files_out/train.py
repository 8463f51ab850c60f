"""A trial that stores checkpoints of several files (a nested directory, an empty one, a link)
and then, from a second harness process whose checkpoint storage is a directory that does not
exist on this machine, reads its latest checkpoint back: that one can only get it through the
master. It prints ``remote read ok`` when the bytes match, and exits 1 otherwise.

At step S the files are ``model/weights.bin`` (``weights(S)``: 200,000 bytes), ``notes.txt``,
``empty/`` and the link ``current -> model/weights.bin``; the validation ``loss`` is ``1/S``.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile

import assay


def weights(step: int) -> bytes:
    seed = hashlib.sha256(f"weights {step}".encode()).digest()
    return (seed * (200_000 // len(seed) + 1))[:200_000]


def store(core: assay.core.Context, step: int) -> str:
    with core.checkpoint.store_path({"steps_completed": step}) as (path, uuid):
        (path / "model").mkdir()
        (path / "model" / "weights.bin").write_bytes(weights(step))
        (path / "notes.txt").write_text(f"step {step}\n")
        (path / "empty").mkdir()
        os.symlink("model/weights.bin", path / "current")
    return uuid


REMOTE = """
import sys, tempfile
from pathlib import Path
import assay
uuid, step, missing = sys.argv[1], int(sys.argv[2]), sys.argv[3]
sys.path.insert(0, ".")
from train import weights
with assay.core.init(checkpoint_storage=missing) as core:
    assert not Path(missing).exists()
    with core.checkpoint.restore_path(uuid) as path:
        assert (path / "model" / "weights.bin").read_bytes() == weights(step)
        assert (path / "current").is_symlink() and (path / "empty").is_dir()
    with tempfile.TemporaryDirectory() as tmp:
        core.checkpoint.download(uuid, tmp)
        assert (Path(tmp) / "notes.txt").read_text() == f"step {step}\\n"
print("remote read ok", flush=True)
"""


def main() -> None:
    with assay.core.init() as core:
        steps = 0
        uuid = ""
        for op in core.searcher.operations():
            while steps < op.length:
                steps += 1
                core.train.report_validation_metrics(steps, {"loss": 1.0 / steps})
                uuid = store(core, steps)
            op.report_completed(1.0 / steps)
        missing = os.path.join(tempfile.gettempdir(), f"not-mounted-{os.getpid()}", "ckpts")
        remote = [sys.executable, "-c", REMOTE, uuid, str(steps), missing]
        sys.exit(subprocess.run(remote, check=False).returncode)


if __name__ == "__main__":
    main()
