"""JSON over HTTP to the master, on the standard library.

Trial processes and every command import this at start-up, so it must be cheap to import: a
request to an ``http://`` master goes over :mod:`assay.client._wire` (a socket), and only an
``https://`` master, or a streamed upload or download (:meth:`HttpSession.open_connection`),
loads ``http.client`` and ``ssl``. Connections are kept alive, one per thread.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import urllib.parse
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from assay.client._wire import Connection
from assay.errors import AssayError, MasterUnreachable, Unauthorized, error_from_payload

if TYPE_CHECKING:
    import http.client
    import ssl

    from assay.client._wire import Response

DEFAULT_MASTER = "http://127.0.0.1:8080"


def master_url(explicit: str | None = None) -> str:
    """The master to talk to: ``explicit``, else ``$ASSAY_MASTER``, else the local default."""
    return explicit or os.environ.get("ASSAY_MASTER") or DEFAULT_MASTER


def tls_context() -> ssl.SSLContext:
    """What an https master's certificate is checked against: the CA bundle (PEM) that
    ``$ASSAY_CA_CERT`` names, else the system's trust store."""
    import ssl

    cafile = os.environ.get("ASSAY_CA_CERT") or None
    try:
        return ssl.create_default_context(cafile=cafile)
    except OSError as exc:
        raise AssayError(
            f"cannot use ASSAY_CA_CERT={cafile}: {exc.strerror or exc} "
            "(expected a PEM file of CA certificates)"
        ) from None


def raise_for_error(status: int, data: bytes) -> None:
    """Raise the error a 4xx/5xx answer carries (``NotFound``, ``InvalidConfig``...)."""
    if status >= 400:
        try:
            payload: Any = json.loads(data)
        except ValueError:
            payload = data.decode(errors="replace")
        raise error_from_payload(status, payload)


def _check_host(host: str) -> None:
    """Raise the ``UnicodeError`` connecting to ``host`` would raise. A host of ASCII labels
    of 1 to 63 characters (a trailing dot allowed) is checked here; any other goes through the
    IDNA codec, which loads ``stringprep`` and ``unicodedata`` (and the socket then takes an
    ASCII host as bytes, without it: ``client/_wire.py``)."""
    labels = host.split(".")
    if len(labels) > 1 and labels[-1] == "":
        labels.pop()
    if not (host.isascii() and all(0 < len(label) < 64 for label in labels)):
        host.encode("idna")


class HttpSession:
    """Requests to one master. Raises :class:`MasterUnreachable` when nothing answers at the URL
    and the error the master sent (``NotFound``, ``InvalidConfig``...) for 4xx/5xx answers."""

    token_source: str | None = None
    """Where the token came from, when that is worth saying in a refusal (``ASSAY_USER_TOKEN``):
    a user who set it long ago may not think of it when a request is refused."""

    def __init__(self, base_url: str, *, token: str | None = None, timeout: float = 30.0) -> None:
        parsed = urllib.parse.urlsplit(base_url if "://" in base_url else f"http://{base_url}")
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise AssayError(f"not a master URL: {base_url!r} (expected http://host:port)")
        try:
            _check_host(parsed.hostname)  # what connecting does first, with a traceback
        except UnicodeError:
            raise AssayError(
                f"not a master URL: {base_url!r} (the host name {parsed.hostname!r} is not "
                "valid: an empty label or one over 63 characters)"
            ) from None
        self.base_url = f"{parsed.scheme}://{parsed.netloc}"
        self._https = parsed.scheme == "https"
        self._host = parsed.hostname
        self._port = parsed.port or (443 if self._https else 80)
        self.tls = tls_context() if self._https else None
        self.token = token
        self.timeout = timeout
        self._local = threading.local()

    def open_connection(self, timeout: float) -> http.client.HTTPConnection:
        """A new ``http.client`` connection of its own to the master (for a streamed upload or
        download); the caller closes it."""
        import http.client

        if self.tls is not None:
            return http.client.HTTPSConnection(
                self._host, self._port, timeout=timeout, context=self.tls
            )
        return http.client.HTTPConnection(self._host, self._port, timeout=timeout)

    def _connection(self, timeout: float) -> http.client.HTTPConnection | Connection:
        conn: http.client.HTTPConnection | Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            # A plain master's requests need no http.client (see the module).
            conn = (
                self.open_connection(timeout)
                if self._https
                else Connection(self._host, self._port, timeout)
            )
            self._local.conn = conn
        conn.timeout = timeout
        if conn.sock is not None:
            conn.sock.settimeout(timeout)
        return conn

    def warm(self) -> None:
        """Connect this thread's connection now, if it has none, so that its first request
        does not wait for the connection to be made; a failure is left to that request (as is
        a connection the master closes while it sits idle: the request retries on a new one)."""
        conn = self._connection(self.timeout)
        if conn.sock is None:
            try:
                conn.connect()
            except OSError:
                self._drop()

    def _drop(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
        self._local.conn = None

    def headers(self, extra: Mapping[str, str] | None, *, signed: bool = True) -> dict[str, str]:
        """The headers every request carries (the token unless not ``signed``, JSON wanted),
        plus ``extra``."""
        headers = {"Accept": "application/json"}
        if self.token and signed:
            headers["Authorization"] = f"Bearer {self.token}"
        if extra:
            headers.update(extra)
        return headers

    def _send(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None,
        body: bytes | None,
        headers: dict[str, str],
        timeout: float,
    ) -> http.client.HTTPResponse | Response:
        target = path
        if params:
            query = urllib.parse.urlencode(
                [(k, v) for k, v in params.items() if v is not None], doseq=True
            )
            target = f"{path}?{query}"
        for attempt in (1, 2):
            conn = self._connection(timeout)
            try:
                conn.request(method, target, body=body, headers=headers)
                return conn.getresponse()
            except (BrokenPipeError, ConnectionResetError) as exc:
                # A kept-alive connection the server closed (http.client's RemoteDisconnected
                # is a ConnectionResetError): retry once on a fresh one.
                self._drop()
                if attempt == 2:
                    raise MasterUnreachable(
                        f"master at {self.base_url} closed the connection: {exc}"
                    ) from exc
            except Exception as exc:
                # An answer cut off (a master killed while answering), or nothing at the URL.
                if not transport_error(exc):
                    raise
                self._drop()
                raise MasterUnreachable(
                    f"no master answering at {self.base_url} ({failure_reason(exc)})"
                ) from exc
        raise AssertionError("unreachable")

    def request(
        self,
        method: str,
        path: str,
        *,
        json_body: Any = None,
        params: Mapping[str, Any] | None = None,
        timeout: float | None = None,
        raw: bool = False,
        signed: bool = True,
    ) -> Any:
        """One request; the decoded JSON answer (or bytes with ``raw=True``). ``signed``: send
        the token (signing in needs none, and its refusal is about the password)."""
        body = None
        headers = self.headers(None, signed=signed)
        if json_body is not None:
            body = json.dumps(json_body).encode()
            headers["Content-Type"] = "application/json"
        response = self._send(
            method,
            path,
            params=params,
            body=body,
            headers=headers,
            timeout=timeout if timeout is not None else self.timeout,
        )
        try:
            data = response.read()
        except Exception as exc:
            if not transport_error(exc):
                raise
            self._drop()
            raise MasterUnreachable(f"master at {self.base_url} stopped answering: {exc}") from exc
        self.raise_for_error(response.status, data, signed=signed)
        if 300 <= response.status < 400:
            # No route of the API redirects: a path the master does not know (``/users/`` for an
            # empty name is redirected to ``/users``), or something else at this address.
            raise AssayError(
                f"the master at {self.base_url} answered {method} {path} with "
                f"{response.status} {response.reason} (a redirect this client does not follow)"
            )
        if raw:
            return data
        return json.loads(data) if data else None

    def get(self, path: str, **kwargs: Any) -> Any:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, json_body: Any = None, **kwargs: Any) -> Any:
        return self.request(
            "POST", path, json_body=json_body if json_body is not None else {}, **kwargs
        )

    def events(
        self, path: str, *, params: Mapping[str, Any] | None = None, timeout: float = 60.0
    ) -> Iterator[tuple[str, Any]]:
        """Server-sent events from ``path`` as ``(event, data)`` pairs, until the stream ends
        (:class:`MasterUnreachable` when the connection breaks)."""
        response = self._send(
            "GET",
            path,
            params=params,
            body=None,
            headers=self.headers({"Accept": "text/event-stream"}),
            timeout=timeout,
        )
        self.raise_for_error(response.status, response.read() if response.status >= 400 else b"")
        event = "message"
        lines: list[str] = []
        try:
            while True:
                try:
                    raw_line = response.readline()
                except Exception as exc:
                    if not transport_error(exc):
                        raise
                    raise MasterUnreachable(
                        f"master at {self.base_url} stopped answering: {failure_reason(exc)}"
                    ) from exc
                if not raw_line:
                    return
                line = raw_line.decode(errors="replace").rstrip("\r\n")
                if not line:
                    if lines:
                        yield event, json.loads("\n".join(lines))
                    event, lines = "message", []
                elif line.startswith(":"):
                    continue
                elif line.startswith("event:"):
                    event = line[6:].strip()
                elif line.startswith("data:"):
                    lines.append(line[5:].strip())
        finally:
            # A stream is never reused for another request.
            self._drop()

    def raise_for_error(self, status: int, data: bytes, *, signed: bool = True) -> None:
        """:func:`raise_for_error`, naming where the token came from when it was refused."""
        try:
            raise_for_error(status, data)
        except Unauthorized as exc:
            if not (signed and self.token and self.token_source):
                raise
            raise Unauthorized(
                f"the token in {self.token_source} was refused: {exc.message} (a token in "
                f"{self.token_source} is used before any sign-in; set a valid one there, or "
                "unset it)",
                exc.details,
            ) from None

    def close(self) -> None:
        self._drop()


def transport_error(exc: BaseException) -> bool:
    """Whether ``exc`` is the connection failing: an ``OSError`` (a timeout, a refusal, an
    answer cut short: :class:`~assay.client._wire.BadAnswer`), or when ``http.client`` carried
    the request, its ``HTTPException``."""
    client = sys.modules.get("http.client")
    return isinstance(exc, OSError) or (
        client is not None and isinstance(exc, client.HTTPException)
    )


def failure_reason(exc: BaseException) -> str:
    """Why a connection to the master failed, in a few words."""
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, socket.gaierror):
        return f"cannot resolve host: {exc.strerror}"
    if isinstance(exc, TimeoutError):
        return "timed out"
    ssl = sys.modules.get("ssl")  # loaded when the master is https, and only then
    if ssl is not None and isinstance(exc, ssl.SSLCertVerificationError):
        return (
            f"its TLS certificate is not trusted: {exc.verify_message}; "
            "set ASSAY_CA_CERT to the CA certificate that signed it"
        )
    return str(exc) or type(exc).__name__
