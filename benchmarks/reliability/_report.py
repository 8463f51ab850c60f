"""What each part of the reliability run hands back: its section of RESULTS.md and its failures."""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from assay.context import pack_context

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
_TEMP = re.compile(re.escape(tempfile.gettempdir()) + r"/assay-reliability-[A-Za-z0-9_-]+")


def scrub(text: str) -> str:
    """``text`` without this machine's paths: the run's temporary directories become
    ``<tmp>``, the repository ``<repo>``, the user's home ``~``."""
    text = _TEMP.sub("<tmp>", text).replace(str(REPO), "<repo>")
    return text.replace(str(Path.home()), "~") if str(Path.home()) != "/" else text


CONTEXTS = HERE / "contexts"
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


@dataclass
class Part:
    """One part's figures as Markdown, and every figure that shows a defect, in words."""

    key: str
    title: str
    lines: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    def add(self, line: str = "") -> None:
        line = scrub(line)
        self.lines.append(line)
        print(line, flush=True)

    def fail(self, what: str) -> None:
        """A defect the figures show: printed at once, listed in the section, never hidden."""
        what = scrub(what)
        self.failures.append(what)
        print(f"FAILURE: {what}", flush=True)

    def check(self, ok: bool, what: str) -> bool:
        if not ok:
            self.fail(what)
        return ok

    def markdown(self) -> str:
        body = "\n".join(self.lines).strip()
        if self.failures:
            listed = "\n".join(f"- **FAILURE:** {f}" for f in self.failures)
            verdict = f"**{len(self.failures)} failure(s):**\n\n{listed}"
        else:
            verdict = "**No failure in this part.**"
        return f"{body}\n\n{verdict}\n"


def context(name: str = "trial") -> bytes:
    """One of this run's trial directories as the tar.gz a submission carries."""
    data: bytes = pack_context(CONTEXTS / name).data
    return data


def mark(ok: bool) -> str:
    return "ok" if ok else "**FAILURE**"
