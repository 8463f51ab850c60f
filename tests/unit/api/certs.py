"""Certificates for TLS tests: a private CA and a server certificate it signs, made by the
``openssl`` command (the tests that need one skip when it is absent)."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass(frozen=True)
class ServerCert:
    ca: Path
    """The CA certificate a client must trust (what ``ASSAY_CA_CERT`` names)."""
    cert: Path
    key: Path


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def make_server_cert(
    where: Path, names: tuple[str, ...] = ("127.0.0.1", "localhost")
) -> ServerCert:
    """A CA under ``where`` and a certificate it signs for ``names`` (addresses or DNS names)."""
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is needed to make test certificates")
    where.mkdir(parents=True, exist_ok=True)
    curve = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    _openssl(
        "req", "-x509", *curve, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
        "-subj", "/CN=assay test CA",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        cwd=where,
    )  # fmt: skip
    _openssl(
        "req", "-new", *curve, "-keyout", "server.key", "-out", "server.csr",
        "-subj", "/CN=assay test master", cwd=where,
    )  # fmt: skip
    alt = ",".join(
        f"IP:{n}" if n.replace(".", "").isdigit() or ":" in n else f"DNS:{n}" for n in names
    )
    (where / "server.ext").write_text(
        f"subjectAltName={alt}\n"
        "basicConstraints=critical,CA:FALSE\n"
        "keyUsage=critical,digitalSignature\n"
        "extendedKeyUsage=serverAuth\n"
    )
    _openssl(
        "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-out", "server.pem", "-days", "2", "-extfile", "server.ext",
        cwd=where,
    )  # fmt: skip
    return ServerCert(where / "ca.pem", where / "server.pem", where / "server.key")


def encrypted_copy(key: Path, out: Path) -> Path:
    """``key`` encrypted with a password, as some deployments keep theirs."""
    _openssl(
        "pkey", "-in", str(key), "-aes256", "-passout", "pass:secret", "-out", str(out),
        cwd=out.parent,
    )  # fmt: skip
    return out
