"""Experiment notes: one-line messages in the experiment's own log (``[experiment]`` lines of
``assay experiment logs``), such as a tuner mapped onto a searcher or a time limit reached."""

from __future__ import annotations

import logging

from assay.db import notes
from assay.master.kernel._tx import Tx, Wake

log = logging.getLogger(__name__)


def add_note(tx: Tx, experiment_id: int, text: str) -> None:
    """Append ``text`` to the experiment's log, in the transaction (it is durable with the
    change it explains)."""
    notes.add(tx.session, experiment_id, text, tx.now)
    tx.act(Wake(("notes", experiment_id)))
    log.info("experiment %d: %s", experiment_id, text)
