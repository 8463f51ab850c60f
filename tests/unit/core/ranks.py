"""Running several ranks of a :class:`DistributedContext` on loopback, as processes or threads."""

from __future__ import annotations

import multiprocessing
import socket
import threading
import traceback
from collections.abc import Callable
from typing import Any

from assay.core import DistributedContext

Body = Callable[[DistributedContext], Any]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def context(
    rank: int, size: int, port: int, local_size: int | None = None, **kw: Any
) -> DistributedContext:
    local = local_size or size
    return DistributedContext(
        rank=rank,
        size=size,
        local_rank=rank % local,
        local_size=local,
        cross_rank=rank // local,
        cross_size=size // local,
        chief_ip="127.0.0.1",
        pub_port=port,
        secret=kw.pop("secret", "test-secret"),
        connect_timeout=kw.pop("connect_timeout", 20.0),
        timeout=kw.pop("timeout", 20.0),
        **kw,
    )


def _process_main(
    body: Body,
    rank: int,
    size: int,
    port: int,
    local_size: int | None,
    kw: dict[str, Any],
    out: Any,
) -> None:
    try:
        ctx = context(rank, size, port, local_size, **kw)
        try:
            out.put((rank, "ok", body(ctx)))
        finally:
            ctx.close()
    except BaseException as exc:
        out.put((rank, "error", f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"))


def in_processes(
    body: Body,
    size: int,
    *,
    local_size: int | None = None,
    ranks: list[int] | None = None,
    timeout: float = 60.0,
    **kw: Any,
) -> dict[int, tuple[str, Any]]:
    """Run ``body(ctx)`` on each of ``ranks`` (default: all) in its own process; each rank's
    ("ok", result) or ("error", message)."""
    port = free_port()
    mp = multiprocessing.get_context("fork")
    out = mp.Queue()
    procs = [
        mp.Process(target=_process_main, args=(body, r, size, port, local_size, kw, out))
        for r in (ranks if ranks is not None else range(size))
    ]
    for p in procs:
        p.start()
    results: dict[int, tuple[str, Any]] = {}
    for _ in procs:
        rank, status, value = out.get(timeout=timeout)
        results[rank] = (status, value)
    for p in procs:
        p.join(timeout=10)
    return results


def in_threads(size: int, *, local_size: int | None = None, **kw: Any) -> list[DistributedContext]:
    """Contexts for every rank, connected to each other from threads of this process."""
    port = free_port()
    found: dict[int, DistributedContext] = {}
    errors: list[BaseException] = []

    def build(rank: int) -> None:
        try:
            found[rank] = context(rank, size, port, local_size, **kw)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=build, args=(r,)) for r in range(size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        for ctx in found.values():
            ctx.close()
        raise errors[0]
    return [found[r] for r in range(size)]


def together(
    contexts: list[DistributedContext], body: Callable[[DistributedContext], Any]
) -> list[Any]:
    """``body(ctx)`` on every rank at once (collectives block until all take part)."""
    results: list[Any] = [None] * len(contexts)
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            results[i] = body(contexts[i])
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(contexts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results
