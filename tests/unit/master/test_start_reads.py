"""What starting a trial reads from the database: never the context's archive, which may be
95 MiB and is read under the master's lock."""

from __future__ import annotations

from typing import Any

from sqlalchemy import event

from assay.master import Master
from tests.unit.master.support import run
from tests.unit.master.test_gang import connect, submit


def test_a_scheduling_pass_starts_trials_without_reading_the_context_archive(
    master: Master, context: bytes
) -> None:
    submit(master, context, slots=1, trials=2)
    agent = connect(master, "a1", 2, "10.0.0.1")
    statements: list[str] = []

    def seen(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        statements.append(statement)

    event.listen(master.db.engine, "before_cursor_execute", seen)
    try:
        run(master.loops.schedule_once())
    finally:
        event.remove(master.db.engine, "before_cursor_execute", seen)
    assert len(agent.of("start")) == 2
    reads = [s for s in statements if "contexts" in s]
    assert reads, "the pass did not look the context up at all"
    assert not [s for s in reads if "contexts.data" in s], reads
