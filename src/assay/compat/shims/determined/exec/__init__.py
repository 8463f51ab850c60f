"""``determined.exec``: the programs Determined ran inside a trial; assay keeps ``harness``,
which trains a legacy ``entrypoint: module:TrialClass``."""

from __future__ import annotations
