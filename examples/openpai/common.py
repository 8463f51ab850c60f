"""What ps.py and worker.py share: OpenPAI's environment, the wire format, the data and the model.

Wire format: each message is one frame, ``>II`` (header length, payload length), then the header
as UTF-8 JSON, then the payload: the model's parameters as little-endian float64, or nothing.
"""

from __future__ import annotations

import json
import os
import socket
import struct
from typing import Any

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

PS_ROLE = "ps"
WORKER_ROLE = "worker"
PORT_LABEL = "ps"
"""The port label the ps reserves in ps-worker.yaml (``ports: {ps: 1}``)."""

FEATURES = 64
CLASSES = 10
PARAMS = FEATURES * CLASSES + CLASSES
FRAME = struct.Struct(">II")
MAX_HEADER = 1 << 20
MAX_PAYLOAD = PARAMS * 8
DTYPE = np.dtype("<f8")


def env(name: str) -> str:
    """An OpenPAI variable; a clear refusal when the script runs outside a task role."""
    value = os.environ.get(name, "").strip()
    if not value:
        raise SystemExit(
            f"{name} is not set: run this as a task role of ps-worker.yaml "
            "(or set the PAI_* variables by hand, see README.md)"
        )
    return value


def first_port(port_list: str) -> int:
    """The first port of an OpenPAI port list ("23001" or "23001,23002")."""
    return int(port_list.split(",", maxsplit=1)[0])


def send(sock: socket.socket, header: dict[str, Any], params: np.ndarray | None = None) -> None:
    body = json.dumps(header).encode()
    payload = b"" if params is None else np.ascontiguousarray(params, dtype=DTYPE).tobytes()
    sock.sendall(FRAME.pack(len(body), len(payload)) + body + payload)


def receive(sock: socket.socket) -> tuple[dict[str, Any], np.ndarray | None]:
    header_size, payload_size = FRAME.unpack(_exactly(sock, FRAME.size))
    if header_size > MAX_HEADER or payload_size > MAX_PAYLOAD or payload_size % 8:
        raise ConnectionError(f"malformed frame ({header_size}, {payload_size} bytes)")
    header = json.loads(_exactly(sock, header_size))
    if not isinstance(header, dict):
        raise ConnectionError(f"malformed header {header!r}")
    if not payload_size:
        return header, None
    return header, np.frombuffer(_exactly(sock, payload_size), dtype=DTYPE).copy()


def _exactly(sock: socket.socket, size: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = sock.recv(size - len(chunks))
        if not chunk:
            raise ConnectionError("the other side closed the connection")
        chunks += chunk
    return bytes(chunks)


def digits() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(x_train, y_train, x_test, y_test): the same split in every process. Pixels are 0..16;
    scaling by a constant (not by statistics of a shard) keeps every worker's inputs alike."""
    x, y = load_digits(return_X_y=True)
    x_train, x_test, y_train, y_test = train_test_split(
        x / 16.0, y, test_size=0.25, random_state=0, stratify=y
    )
    return x_train, y_train, x_test, y_test


def shard(x: np.ndarray, y: np.ndarray, index: int, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Worker ``index`` of ``count`` trains on every count-th example from its index on."""
    return x[index::count], y[index::count]


def unpack(params: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return params[: FEATURES * CLASSES].reshape(FEATURES, CLASSES), params[FEATURES * CLASSES :]


def probabilities(params: np.ndarray, x: np.ndarray) -> np.ndarray:
    weights, bias = unpack(params)
    logits = x @ weights + bias
    logits -= logits.max(axis=1, keepdims=True)
    exp = np.exp(logits)
    return exp / exp.sum(axis=1, keepdims=True)


def accuracy(params: np.ndarray, x: np.ndarray, y: np.ndarray) -> float:
    return float((probabilities(params, x).argmax(axis=1) == y).mean())


def loss(params: np.ndarray, x: np.ndarray, y: np.ndarray) -> float:
    return float(-np.log(probabilities(params, x)[np.arange(len(y)), y] + 1e-12).mean())


def local_sgd(
    params: np.ndarray,
    x: np.ndarray,
    y: np.ndarray,
    *,
    lr: float,
    epochs: int,
    batch_size: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """Mini-batch SGD on softmax regression, starting from ``params``; returns the new ones."""
    params = params.copy()
    weights, bias = unpack(params)  # views into params: updating them updates params
    for _ in range(epochs):
        order = rng.permutation(len(y))
        for start in range(0, len(y), batch_size):
            batch = order[start : start + batch_size]
            grad = probabilities(params, x[batch])
            grad[np.arange(len(batch)), y[batch]] -= 1.0
            grad /= len(batch)
            weights -= lr * (x[batch].T @ grad)
            bias -= lr * grad.sum(axis=0)
    return params
