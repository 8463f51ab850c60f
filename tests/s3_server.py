"""A real S3-compatible server for tests: moto's server mode, in a thread on a loopback port."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

ACCESS_KEY = "assay-test-access"
SECRET_KEY = "assay-test-secret"


@dataclass(frozen=True)
class S3Server:
    endpoint_url: str

    def client(self) -> Any:
        """A plain boto3 client of the server, to look at what storage wrote."""
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint_url,
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
            region_name="us-east-1",
        )

    def create_bucket(self, name: str) -> str:
        self.client().create_bucket(Bucket=name)
        return name

    def config(self, bucket: str, **extra: Any) -> dict[str, Any]:
        """A ``checkpoint_storage`` section for ``bucket`` on this server."""
        return {
            "type": "s3",
            "bucket": bucket,
            "endpoint_url": self.endpoint_url,
            "access_key": ACCESS_KEY,
            "secret_key": SECRET_KEY,
            **extra,
        }


@contextmanager
def s3_server() -> Iterator[S3Server]:
    from moto.server import ThreadedMotoServer

    # Its request log would drown the test output.
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        yield S3Server(f"http://{host}:{port}")
    finally:
        server.stop()
