"""Waits for every worker to say hello on its reserved port, then answers each and exits."""

import os
import socket

count = int(os.environ["PAI_TASK_ROLE_TASK_COUNT_worker"])  # noqa: SIM112 (OpenPAI spells role names as written)
port = int(os.environ["PAI_CONTAINER_HOST_ps_PORT_LIST"].split(",")[0])  # noqa: SIM112 (OpenPAI spells role names as written)
server = socket.create_server(("0.0.0.0", port))
server.settimeout(120)
print(f"ps listening on {port} for {count} workers", flush=True)
seen = set()
conns = []
while len(seen) < count:
    conn, _ = server.accept()
    index = int(conn.recv(64).decode().strip())
    seen.add(index)
    conns.append(conn)
for conn in conns:
    conn.sendall(b"ok\n")
    conn.close()
print(f"ps heard workers {sorted(seen)}", flush=True)
