"""The trial's line to its agent's relay of metric reports and preemptions
(:mod:`assay.protocol._relay`)."""

from __future__ import annotations

import json
import logging
import os
import socket
from typing import Any

from assay.client import HttpSession
from assay.errors import error_from_payload
from assay.protocol import RELAY_ENV, SEND_IT_YOURSELF

log = logging.getLogger("assay.core")

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
    with its other trials' (``ASSAY_AGENT_RELAY``), and reads back what the master said; or
    watches, through the agent, for the master's request that the trial stop. One request at a
    time: the reporter and the preemption watcher each have their own."""

    def __init__(self, address: str, token: str, timeout: float = PATIENCE) -> None:
        self.address = "\0" + address[1:] if address.startswith("@") else address
        self.token = token
        self.timeout = timeout
        self._sock: socket.socket | None = None
        self._reader: Any = None
        self._id = 0

    def post(
        self,
        trial_id: int,
        reports: list[dict[str, Any]] | None = None,
        *,
        checkpoint: dict[str, Any] | None = None,
    ) -> bool:
        """True once the master has stored the batch of reports (or registered the
        checkpoint); False when the agent cannot relay it (the trial sends it itself). Raises
        the error the master answered, as HTTP would, and :class:`RelayGone` when the agent
        does not answer."""
        request: dict[str, Any] = {"token": self.token, "trial_id": trial_id}
        if checkpoint is not None:
            request["checkpoint"] = checkpoint
        else:
            request["reports"] = reports or []
        answer = self._exchange(request, self.timeout)
        status = answer.get("status")
        if status == 204:
            return True
        if status == SEND_IT_YOURSELF:
            return False
        raise error_from_payload(int(status or 500), {"error": answer.get("error")})

    def preemption(self, allocation_id: str, wait: float) -> bool | None:
        """Whether the master has asked the allocation to stop, waiting up to ``wait`` seconds
        for a yes; None when the agent cannot tell (the trial asks the master itself).
        :class:`RelayGone` when the agent does not answer."""
        request = {"preemption": allocation_id, "wait": wait}
        answer = self._exchange(request, wait + self.timeout)
        status = answer.get("status")
        if status == 200:
            return bool(answer.get("preempt"))
        if status == SEND_IT_YOURSELF:
            return None
        raise error_from_payload(int(status or 500), {"error": answer.get("error")})

    def _exchange(self, request: dict[str, Any], timeout: float) -> dict[str, Any]:
        self._id += 1
        try:
            if self._sock is None:
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.settimeout(self.timeout)
                sock.connect(self.address)
                self._sock, self._reader = sock, sock.makefile("rb")
            self._sock.settimeout(timeout)
            self._sock.sendall(json.dumps({"id": self._id, **request}).encode() + b"\n")
            line = self._reader.readline()
        except TimeoutError as exc:
            self.close()  # its late answer is not read as the next request's
            raise RelayGone(f"no answer within {timeout:.0f}s", for_good=False) from exc
        except OSError as exc:
            self.close()
            raise RelayGone(str(exc), for_good=True) from exc
        if not line:
            self.close()
            raise RelayGone("the agent closed the relay", for_good=True)
        answer: dict[str, Any] = json.loads(line)
        return answer

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
        self._sock = self._reader = None


class Relayed:
    """One thread's way to the master for what the agent can carry (``ASSAY_AGENT_RELAY``):
    through the relay while it takes it, over HTTP otherwise."""

    def __init__(self, token: str) -> None:
        address = os.environ.get(RELAY_ENV)
        self.client = RelayClient(address, token) if address else None

    def post(
        self, http: HttpSession, path: str, body: dict[str, Any], trial_id: int, **what: Any
    ) -> None:
        """``body`` to ``path``, or ``what`` (``reports=`` or ``checkpoint=``) for ``trial_id``
        through the relay. The master's refusal is raised either way."""
        if self.client is not None:
            try:
                if self.client.post(trial_id, **what):
                    return
            except RelayGone as exc:
                log.debug("the agent's relay did not take it (%s)", exc)
                if exc.for_good:
                    self.client = None
            else:
                self.client = None  # the agent's master takes nothing relayed
        http.post(path, body)

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
