"""The metric reporter connects to the master when it starts, while the trial trains, so its
first report (for a short trial, the last thing it does) does not wait for a connection; the
report then goes over that same connection; and a searcher operation is completed only once
the reports before it are delivered. (A loopback server records connections and requests.)"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from assay.client import HttpSession
from assay.core._searcher import SearcherContext, SearcherOperation
from assay.core._session import MasterSession, Reporter
from assay.core._train import TrainContext
from assay.errors import AssayError, MasterUnreachable


class _Recorder(ThreadingHTTPServer):
    def __init__(self) -> None:
        self.connections: list[tuple[str, int]] = []
        self.posts: list[tuple[str, int]] = []

        recorder = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["Content-Length"]))
                recorder.posts.append(self.client_address)
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)

    def verify_request(self, request: object, client_address: object) -> bool:
        self.connections.append(client_address)  # type: ignore[arg-type]
        return True


@pytest.fixture
def recorder() -> Iterator[_Recorder]:
    server = _Recorder()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def _until(condition: object, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_the_reporter_connects_before_its_first_report_and_sends_it_on_that_connection(
    recorder: _Recorder,
) -> None:
    url = f"http://127.0.0.1:{recorder.server_address[1]}"
    reporter = Reporter(MasterSession(url, "token"), trial_id=1)
    try:
        _until(lambda: len(recorder.connections) == 1)
        assert recorder.posts == [], "connected, nothing sent yet"
        reporter.put({"group": "validation", "steps_completed": 1, "metrics": {"loss": 1.0}})
        reporter.flush(timeout=30)
        assert recorder.posts == recorder.connections, "the report went over that connection"
    finally:
        reporter.close(timeout=30)


def test_warming_a_connection_to_no_master_leaves_the_failure_to_the_first_request() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    http = HttpSession(f"http://127.0.0.1:{port}")
    http.warm()  # nothing listens there: no error yet
    assert getattr(http._local, "conn", None) is None
    with pytest.raises(MasterUnreachable):
        http.get("/api/v1/master", timeout=5)


def test_a_master_url_whose_host_name_cannot_be_used_is_refused_when_given() -> None:
    with pytest.raises(AssayError, match=r"host name 'a\.\.b' is not valid"):
        HttpSession("http://a..b:8080")


def test_a_report_after_the_master_closed_the_idle_connection_goes_on_a_new_one() -> None:
    """A master closes a connection left idle (uvicorn after 5 s): the first report finds it
    closed and is sent on a new connection, once."""

    class ClosesTheFirst(_Recorder):
        def verify_request(self, request: object, client_address: object) -> bool:
            super().verify_request(request, client_address)
            return len(self.connections) > 1  # the first is closed unanswered

    server = ClosesTheFirst()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    reporter = Reporter(MasterSession(f"http://127.0.0.1:{server.server_address[1]}", "t"), 1)
    try:
        _until(lambda: len(server.connections) == 1)
        reporter.put({"group": "validation", "steps_completed": 1, "metrics": {"loss": 1.0}})
        reporter.flush(timeout=30)
        assert len(server.connections) == 2
        assert server.posts == [server.connections[1]]
    finally:
        reporter.close(timeout=30)
        server.shutdown()
        server.server_close()


class _SlowReports(ThreadingHTTPServer):
    """Records the paths POSTed to it, in the order it answered them; a metrics report is
    answered 0.5 s late (a master busy storing), anything else at once."""

    def __init__(self) -> None:
        self.answered: list[str] = []
        self.refuse: Callable[[str], int | None] = lambda path: None
        """The status to refuse a request for ``path`` (its last part) with, or None."""
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["Content-Length"]))
                if self.path.endswith("/metrics"):
                    time.sleep(0.5)
                path = self.path.rsplit("/", 1)[-1]
                server.answered.append(path)
                status = server.refuse(path)
                if status is not None:
                    body = json.dumps({"error": {"type": "Conflict", "message": "no"}}).encode()
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)


def test_an_operation_is_completed_only_once_the_validation_before_it_is_stored() -> None:
    # Whoever sees the searcher's progress (ASHA's rungs) must find the validation it came
    # from: the reports still on their way are delivered before the searcher hears.
    server = _SlowReports()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        session = MasterSession(f"http://127.0.0.1:{server.server_address[1]}", "token")
        train = TrainContext(session, trial_id=1, experiment_id=1)
        searcher = SearcherContext(session, 1, on_complete=train._flush)
        train.report_validation_metrics(2, {"loss": 0.5})
        SearcherOperation(searcher, 2).report_completed(0.5)
        assert server.answered == ["metrics", "completed_operation"]
        train._close()
    finally:
        server.shutdown()
        server.server_close()


def test_an_operation_the_master_refused_can_be_completed_again() -> None:
    server = _SlowReports()
    refusals = iter([409])
    server.refuse = lambda path: next(refusals, None) if path == "completed_operation" else None
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        session = MasterSession(f"http://127.0.0.1:{server.server_address[1]}", "token")
        op = SearcherOperation(SearcherContext(session, 1), 2)
        with pytest.raises(AssayError):
            op.report_completed(0.5)
        op.report_completed(0.5)  # not "already called": the master never had it
        with pytest.raises(RuntimeError, match="already called"):
            op.report_completed(0.5)
        assert server.answered == ["completed_operation", "completed_operation"]
    finally:
        server.shutdown()
        server.server_close()
