"""A shell's tunnel from the owner's side: a WebSocket to the master that carries the TCP stream
of the shell's sshd, and the relay between it and a program's stdin and stdout (what ssh's
``ProxyCommand`` is)."""

from __future__ import annotations

import json
import threading
from typing import IO, Any

from assay.client._http import tls_context
from assay.errors import AssayError, MasterUnreachable, error_from_payload

_CHUNK = 64 * 1024


def open_tunnel(base_url: str, token: str | None, path: str) -> Any:
    """The tunnel at ``path`` of the master at ``base_url`` (``websockets``' sync connection);
    a refusal is raised as the master's error (not signed in, not the owner, not running)."""
    from websockets.exceptions import InvalidStatus
    from websockets.sync.client import connect

    url = base_url.replace("https://", "wss://", 1).replace("http://", "ws://", 1) + path
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        return connect(
            url,
            additional_headers=headers,
            ssl=tls_context() if url.startswith("wss://") else None,
            max_size=None,
            open_timeout=30,
            compression=None,
        )
    except InvalidStatus as exc:
        answer = exc.response
        try:
            payload = json.loads(answer.body or b"")
        except ValueError:
            payload = None
        raise error_from_payload(answer.status_code, payload) from None
    except OSError as exc:
        raise MasterUnreachable(f"no master answering at {base_url} ({exc})") from exc


def relay(tunnel: Any, stdin: IO[bytes], stdout: IO[bytes]) -> None:
    """Pass ``stdin`` to the tunnel and the tunnel to ``stdout`` until either ends."""

    def up() -> None:
        try:
            while chunk := stdin.read1(_CHUNK) if hasattr(stdin, "read1") else stdin.read(_CHUNK):
                tunnel.send(chunk)
        except (OSError, AssayError):
            pass
        finally:
            tunnel.close()

    threading.Thread(target=up, name="tunnel-up", daemon=True).start()
    from websockets.exceptions import ConnectionClosed

    try:
        for message in tunnel:
            stdout.write(message if isinstance(message, bytes) else message.encode())
            stdout.flush()
    except (ConnectionClosed, BrokenPipeError):
        pass
