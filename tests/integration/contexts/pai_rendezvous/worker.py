"""Finds the ps through OpenPAI's variables, says its index, waits for the answer."""

import os
import socket
import time

index = os.environ["PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX"]
host = os.environ["PAI_HOST_IP_ps_0"]  # noqa: SIM112 (OpenPAI spells role names as written)
port = int(os.environ["PAI_PORT_LIST_ps_0_ps"])  # noqa: SIM112 (OpenPAI spells role names as written)
print(
    f"worker {index} of {os.environ['PAI_TASK_ROLE_TASK_COUNT_worker']} "  # noqa: SIM112 (OpenPAI spells role names as written)
    f"(task index {os.environ['PAI_TASK_INDEX']}, roles {os.environ['PAI_TASK_ROLE_LIST']}, "
    f"job {os.environ['PAI_JOB_NAME']} of {os.environ['PAI_USER_NAME']}) -> {host}:{port}",
    flush=True,
)
deadline = time.monotonic() + 90
while True:
    try:
        conn = socket.create_connection((host, port), timeout=5)
        break
    except OSError:
        if time.monotonic() > deadline:
            raise
        time.sleep(0.2)
conn.sendall(f"{index}\n".encode())
answer = conn.recv(16).decode().strip()
print(f"worker {index} got {answer}", flush=True)
