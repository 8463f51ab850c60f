"""A worker of ps-worker.yaml: trains the ps's model on its shard of digits, round by round.

It finds the ps through OpenPAI's variables (``PAI_HOST_IP_ps_0``, ``PAI_PORT_LIST_ps_0_ps``)
and keeps trying to connect for a while, since the ps may start after it. Its shard is every
``PAI_TASK_ROLE_TASK_COUNT_worker``-th training example from its index
(``PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX``) on. Each round it trains the model it received
for the local epochs the ps asked for and sends it back; on the final model it prints the test
accuracy, tells the ps it is done, and exits 0 once the ps says goodbye.
"""

from __future__ import annotations

import argparse
import socket
import time

import common
import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--connect-timeout", type=float, default=60.0, help="Seconds to keep trying the ps."
    )
    args = parser.parse_args()

    index = int(common.env("PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX"))
    count = int(common.env(f"PAI_TASK_ROLE_TASK_COUNT_{common.WORKER_ROLE}"))
    host = common.env(f"PAI_HOST_IP_{common.PS_ROLE}_0")
    port = common.first_port(common.env(f"PAI_PORT_LIST_{common.PS_ROLE}_0_{common.PORT_LABEL}"))
    x_train, y_train, x_test, y_test = common.digits()
    x, y = common.shard(x_train, y_train, index, count)
    rng = np.random.default_rng(index)
    name = f"worker {index}/{count}"
    print(f"{name}: {len(y)} examples, connecting to the ps at {host}:{port}", flush=True)

    with _connect(host, port, args.connect_timeout) as conn:
        common.send(conn, {"op": "hello", "index": index, "count": count, "samples": len(y)})
        while True:
            try:
                order, params = common.receive(conn)
            except (ConnectionError, TimeoutError) as exc:
                raise SystemExit(f"{name}: lost the ps: {exc}") from None
            if params is None:
                raise SystemExit(f"{name}: the ps sent {order} without a model")
            if order["op"] == "final":
                final = common.accuracy(params, x_test, y_test)
                print(f"{name}: final test accuracy: {final:.4f}", flush=True)
                common.send(conn, {"op": "done", "index": index, "accuracy": final})
                _wait_for_bye(conn, name)
                return
            if order["op"] != "train":
                raise SystemExit(f"{name}: unexpected message {order}")
            params = common.local_sgd(
                params,
                x,
                y,
                lr=float(order["lr"]),
                epochs=int(order["epochs"]),
                batch_size=int(order["batch_size"]),
                rng=rng,
            )
            loss = common.loss(params, x, y)
            print(
                f"{name}: round {order['round']}/{order['rounds']} shard loss {loss:.4f} "
                f"shard accuracy {common.accuracy(params, x, y):.4f}",
                flush=True,
            )
            common.send(conn, {"op": "update", "round": order["round"], "loss": loss}, params)


def _wait_for_bye(conn: socket.socket, name: str) -> None:
    """Stay until the ps has printed its result: when every worker has exited the job is over
    and the ps may be stopped."""
    try:
        answer, _ = common.receive(conn)
    except (ConnectionError, TimeoutError) as exc:
        raise SystemExit(f"{name}: the ps went away before saying goodbye: {exc}") from None
    if answer.get("op") != "bye":
        raise SystemExit(f"{name}: unexpected message {answer}")


def _connect(host: str, port: int, timeout: float) -> socket.socket:
    """Connect to the ps, retrying until ``timeout`` seconds have passed."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            conn = socket.create_connection((host, port), timeout=10)
        except OSError as exc:
            if time.monotonic() >= deadline:
                raise SystemExit(f"no ps at {host}:{port} after {timeout:.0f} s: {exc}") from None
            time.sleep(0.5)
            continue
        # Rounds wait for the slowest worker: allow far more than one round takes.
        conn.settimeout(300)
        return conn


if __name__ == "__main__":
    main()
