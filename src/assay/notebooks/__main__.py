from __future__ import annotations

import sys

from assay.notebooks._launch import main

sys.exit(main())
