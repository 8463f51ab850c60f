"""A real Azure Blob Storage server for tests: Azurite, Microsoft's emulator, run with Node on a
loopback port from ``tests/tools`` (``make test`` installs it there from the committed lockfile).

Without it the Azure tests skip with the reason, except under ``CI=true``, where a missing
Azurite is a failure: CI must never pass by not testing a backend.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.integration.cluster import free_port

TOOLS = Path(__file__).parent / "tools"
AZURITE = TOOLS / "node_modules" / "azurite" / "dist" / "src" / "blob" / "main.js"

# Azurite's one account and its published key (the emulator's documented development account).
ACCOUNT = "devstoreaccount1"
ACCOUNT_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)
_START_SECONDS = 30.0


@dataclass(frozen=True)
class AzureServer:
    account_url: str

    @property
    def connection_string(self) -> str:
        return (
            f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};"
            f"AccountKey={ACCOUNT_KEY};BlobEndpoint={self.account_url};"
        )

    def service(self) -> Any:
        """A plain azure-storage-blob client of the server, to look at what storage wrote."""
        from azure.storage.blob import BlobServiceClient

        return BlobServiceClient.from_connection_string(self.connection_string)

    def create_container(self, name: str) -> str:
        self.service().create_container(name)
        return name

    def config(self, container: str, **extra: Any) -> dict[str, Any]:
        """A ``checkpoint_storage`` section for ``container`` on this server."""
        return {
            "type": "azure",
            "container": container,
            "connection_string": self.connection_string,
            **extra,
        }


def _missing() -> str | None:
    if shutil.which("node") is None:
        return "node is not installed (Azurite runs on Node.js)"
    if not AZURITE.is_file():
        return f"Azurite is not installed in {TOOLS} (make test-tools installs it)"
    return None


def _wait_listening(port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + _START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"Azurite exited with {process.returncode}: {log.read_text()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"Azurite did not listen on {port} in {_START_SECONDS:.0f} s")


@contextmanager
def azure_server() -> Iterator[AzureServer]:
    missing = _missing()
    if missing is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the Azure storage tests must run under CI: {missing}")
        pytest.skip(missing)
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="azurite-") as workdir:
        log = Path(workdir) / "azurite.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                [
                    "node",
                    str(AZURITE),
                    "--blobHost",
                    "127.0.0.1",
                    "--blobPort",
                    str(port),
                    "--inMemoryPersistence",
                    # The library may speak a newer API version than the emulator knows.
                    "--skipApiVersionCheck",
                    "--silent",
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=workdir,
            )
        try:
            _wait_listening(port, process, log)
            yield AzureServer(f"http://127.0.0.1:{port}/{ACCOUNT}")
        finally:
            # It keeps nothing (in-memory), and on SIGTERM it waits for idle keep-alive
            # connections to close.
            process.kill()
            process.wait()
