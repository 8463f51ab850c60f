"""The parameter server of ps-worker.yaml: holds the model and averages what the workers train.

It listens on its reserved port (``PAI_CONTAINER_HOST_ps_PORT_LIST``), waits for every worker
(``PAI_TASK_ROLE_TASK_COUNT_worker``) to say hello, then runs synchronous rounds: it sends the
model to all workers, each trains it on its shard, and the ps averages their models, weighted by
shard size. After the last round it sends the final model, waits until every worker said done,
prints the test accuracy, lets the workers go and exits 0. A worker lost midway makes it exit 1
(the job fails).
"""

from __future__ import annotations

import argparse
import os
import socket
import time
from typing import Any

import common
import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--lr", type=float, default=0.3)
    parser.add_argument("--epochs", type=int, default=2, help="Local epochs per round.")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument(
        "--wait", type=float, default=120.0, help="Seconds to wait for all workers to connect."
    )
    args = parser.parse_args()

    port = common.first_port(_own_port_list())
    workers = int(common.env(f"PAI_TASK_ROLE_TASK_COUNT_{common.WORKER_ROLE}"))
    _, _, x_test, y_test = common.digits()
    print(f"ps: listening on 0.0.0.0:{port} for {workers} workers", flush=True)

    with socket.create_server(("0.0.0.0", port)) as server:
        conns, samples = _gather(server, workers, args.wait)
    try:
        params = np.zeros(common.PARAMS)
        for round_ in range(1, args.rounds + 1):
            order = {
                "op": "train",
                "round": round_,
                "rounds": args.rounds,
                "lr": args.lr,
                "epochs": args.epochs,
                "batch_size": args.batch_size,
            }
            for conn in conns.values():
                common.send(conn, order, params)
            updates, losses = [], []
            for index, conn in conns.items():
                header, update = _expect(conn, index, "update")
                if update is None or header.get("round") != round_:
                    raise SystemExit(f"ps: worker {index} answered round {round_} with {header}")
                updates.append(update)
                losses.append(float(header["loss"]))
            weights = np.array([samples[i] for i in conns], dtype=float)
            params = np.average(np.stack(updates), axis=0, weights=weights)
            print(
                f"ps: round {round_}/{args.rounds} mean worker loss {np.mean(losses):.4f} "
                f"test accuracy {common.accuracy(params, x_test, y_test):.4f}",
                flush=True,
            )
        for conn in conns.values():
            common.send(conn, {"op": "final", "round": args.rounds}, params)
        for index, conn in conns.items():
            header, _ = _expect(conn, index, "done")
            print(f"ps: worker {index} done, it measured {header['accuracy']:.4f}", flush=True)
        print(f"ps: final test accuracy: {common.accuracy(params, x_test, y_test):.4f}", flush=True)
        # Only now may the workers exit: once they all succeeded the job ends and the ps may be
        # stopped, so it has said everything first.
        for conn in conns.values():
            common.send(conn, {"op": "bye"})
    finally:
        for conn in conns.values():
            conn.close()


def _own_port_list() -> str:
    # The container's own view first; the cluster-wide name of ps 0 as a fallback.
    own = f"PAI_CONTAINER_HOST_{common.PORT_LABEL}_PORT_LIST"
    if os.environ.get(own):
        return os.environ[own]
    index = common.env("PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX")
    return common.env(f"PAI_PORT_LIST_{common.PS_ROLE}_{index}_{common.PORT_LABEL}")


def _gather(
    server: socket.socket, workers: int, wait: float
) -> tuple[dict[int, socket.socket], dict[int, int]]:
    """Accept until each worker index 0..workers-1 said hello; in index order."""
    deadline = time.monotonic() + wait
    conns: dict[int, socket.socket] = {}
    samples: dict[int, int] = {}
    while len(conns) < workers:
        server.settimeout(max(0.1, deadline - time.monotonic()))
        try:
            conn, address = server.accept()
        except TimeoutError:
            raise SystemExit(
                f"ps: only {len(conns)} of {workers} workers connected in {wait:.0f} s"
            ) from None
        conn.settimeout(wait)
        try:
            header, _ = common.receive(conn)
        except (ConnectionError, TimeoutError, ValueError) as exc:
            conn.close()
            print(f"ps: ignored {address}, it sent no hello: {exc}", flush=True)
            continue
        index = header.get("index")
        if header.get("op") != "hello" or not isinstance(index, int) or index in conns:
            conn.close()
            print(f"ps: refused {address}: {header}", flush=True)
            continue
        if header.get("count") != workers or not 0 <= index < workers:
            raise SystemExit(
                f"ps: worker {index} counts {header.get('count')} workers, not {workers}"
            )
        conns[index] = conn
        samples[index] = int(header["samples"])
        print(
            f"ps: worker {index} connected from {address[0]} ({samples[index]} examples)",
            flush=True,
        )
    return dict(sorted(conns.items())), samples


def _expect(conn: socket.socket, index: int, op: str) -> tuple[dict[str, Any], np.ndarray | None]:
    try:
        header, params = common.receive(conn)
    except (ConnectionError, TimeoutError) as exc:
        raise SystemExit(f"ps: lost worker {index}: {exc}") from None
    if header.get("op") != op:
        raise SystemExit(f"ps: worker {index} sent {header.get('op')!r}, expected {op!r}")
    return header, params


if __name__ == "__main__":
    main()
