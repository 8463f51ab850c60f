"""Write one benchmark's section of ``benchmarks/RESULTS.md``, leaving the other sections as
they are."""

from __future__ import annotations

import datetime as dt
import os
import platform
import re
from pathlib import Path

RESULTS = Path(__file__).resolve().parent.parent / "RESULTS.md"
HEADER = (
    "# Benchmark results\n\n"
    "Figures written by the scripts in `benchmarks/`; each section says how it was made.\n"
)


def machine() -> str:
    model = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"{model}, {os.cpu_count()} cores visible (shared with other work), "
        f"Python {platform.python_version()}, {platform.system()} {platform.release()}"
    )


def stamp(command: str) -> str:
    today = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"- machine: {machine()}\n- date: {today}\n- command: `{command}`\n"


def write_section(key: str, body: str, path: Path = RESULTS) -> None:
    """Replace the section between ``<!-- key:start -->`` and ``<!-- key:end -->`` (appending it
    when absent)."""
    text = path.read_text() if path.exists() else HEADER
    block = f"<!-- {key}:start -->\n{body.rstrip()}\n<!-- {key}:end -->"
    pattern = re.compile(rf"<!-- {re.escape(key)}:start -->.*?<!-- {re.escape(key)}:end -->", re.S)
    if pattern.search(text):
        text = pattern.sub(lambda _: block, text)
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    path.write_text(text)
