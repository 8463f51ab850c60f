"""``determined.launch``: Determined's launchers, as assay's (:mod:`assay.launch`).

Run as ``python3 -m determined.launch.NAME [OPTIONS... --] CMD...`` in an entrypoint.
"""

from __future__ import annotations
