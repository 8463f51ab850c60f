"""The trial's line to its agent's relay of metric reports (:mod:`assay.protocol._relay`)."""

from __future__ import annotations

import json
import socket
from typing import Any

from assay.errors import error_from_payload
from assay.protocol import SEND_IT_YOURSELF

PATIENCE = 5.0
"""How long a batch waits for the agent's answer before the reporter sends it over HTTP itself.
A frozen or cut-off agent answers nothing while the master may have given its allocation up:
the trial must still hear that from the master soon (and stop), as it would over HTTP. A batch
the agent delivers late as well is stored once."""


class RelayGone(Exception):
    """The agent's relay did not answer; ``for_good``: it is not there (the reporter sends over
    HTTP from then on), else it was too slow this time."""

    def __init__(self, message: str, *, for_good: bool) -> None:
        super().__init__(message)
        self.for_good = for_good


class RelayClient:
    """Sends a trial's batches of metric reports to its agent, which carries them to the master
    with its other trials' (``ASSAY_AGENT_RELAY``), and reads back what the master said."""

    def __init__(self, address: str, token: str, timeout: float = PATIENCE) -> None:
        self.address = "\0" + address[1:] if address.startswith("@") else address
        self.token = token
        self.timeout = timeout
        self._sock: socket.socket | None = None
        self._reader: Any = None
        self._id = 0

    def post(self, trial_id: int, reports: list[dict[str, Any]]) -> bool:
        """True once the master has stored the batch; False when the agent cannot relay it
        (the trial sends it itself). Raises the error the master answered, as HTTP would,
        and :class:`RelayGone` when the agent does not answer."""
        self._id += 1
        request = {"id": self._id, "token": self.token, "trial_id": trial_id, "reports": reports}
        try:
            if self._sock is None:
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.settimeout(self.timeout)
                sock.connect(self.address)
                self._sock, self._reader = sock, sock.makefile("rb")
            self._sock.sendall(json.dumps(request).encode() + b"\n")
            line = self._reader.readline()
        except TimeoutError as exc:
            self.close()  # its late answer is not read as the next batch's
            raise RelayGone(f"no answer within {self.timeout:.0f}s", for_good=False) from exc
        except OSError as exc:
            self.close()
            raise RelayGone(str(exc), for_good=True) from exc
        if not line:
            self.close()
            raise RelayGone("the agent closed the relay", for_good=True)
        answer = json.loads(line)
        status = answer.get("status")
        if status == 204:
            return True
        if status == SEND_IT_YOURSELF:
            return False
        raise error_from_payload(int(status), {"error": answer.get("error")})

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
        self._sock = self._reader = None
