"""A test trial that starts a helper process, prints ``pids TRIAL HELPER`` and then waits to be
ended: tests find both processes by those pids (and read their environment)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
print(f"pids {os.getpid()} {helper.pid}", flush=True)
time.sleep(600)
