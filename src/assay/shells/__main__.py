from __future__ import annotations

import sys

from assay.shells._launch import main

sys.exit(main())
