"""Hostile input: a corpus of submissions an attacker or a careless script could send (configs,
context archives, OpenPAI jobs, NNI configs), each sent to a real master as a user who is not
an admin, with a timeout, and its answer classified:

- *refused cleanly*: 4xx with the API's error shape ``{"error": {"type", "message",
  "details"}}``, a one-line message, no traceback text, not an echo of the input;
- *refused, not cleanly*: 4xx without that shape, or a message of several lines or pages;
- *accepted*: 2xx (listed by name: a reader judges whether acceptance is right);
- *5xx*, *traceback* (traceback text in the answer, whatever its status), *hang* (no answer
  within the timeout), *no answer* (the connection failed).

A sample goes through the ``assay`` command too. Nothing here ever runs: the master has no
agent."""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import re
import socket
import struct
import subprocess
import sys
import tarfile
import time
import zipfile
import zlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml

from benchmarks.reliability._cluster import Cluster, running
from benchmarks.reliability._report import Part

MIB = 2**20
GIB = 2**30
TIMEOUT = 30.0
"""Seconds an answer may take before it counts as a hang."""
TRACEBACK = re.compile(r"Traceback \(most recent call last\)|File \"[^\"]+\", line \d+")

BASE: dict[str, Any] = {
    "name": "hostile",
    "entrypoint": "python3 train.py",
    "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 1}},
    "max_restarts": 0,
}
BASE_TEXT = yaml.safe_dump(BASE, sort_keys=False)

PAI_BASE: dict[str, Any] = {
    "protocolVersion": 2,
    "name": "hostile-job",
    "type": "job",
    "prerequisites": [{"name": "img", "type": "dockerimage", "uri": "python:3.11"}],
    "taskRoles": {
        "worker": {
            "instances": 1,
            "dockerImage": "img",
            "resourcePerInstance": {"gpu": 0, "cpu": 1, "memoryMB": 256},
            "commands": ["echo hello"],
        }
    },
}

NNI_BASE: dict[str, Any] = {
    "experimentName": "hostile-nni",
    "trialCommand": "python3 train.py",
    "trialCodeDirectory": ".",
    "trialConcurrency": 1,
    "maxTrialNumber": 2,
    "searchSpace": {"x": {"_type": "uniform", "_value": [0, 1]}},
    "tuner": {"name": "Random"},
    "trainingService": {"platform": "local"},
}

DUPLICATE_ROLES = b"""protocolVersion: 2
name: dup-roles
type: job
prerequisites: [{name: img, type: dockerimage, uri: "python:3.11"}]
taskRoles:
  worker: {dockerImage: img, resourcePerInstance: {gpu: 0, cpu: 1, memoryMB: 256}, commands: [a]}
  worker: {dockerImage: img, resourcePerInstance: {gpu: 0, cpu: 1, memoryMB: 256}, commands: [b]}
"""
"""An OpenPAI job naming one task role twice."""

BOMB = "data:\n" + "".join(
    f"  {level}: &{level} [{', '.join([f'*{prev}'] * 9 if prev.strip() else ['lol'] * 9)}]\n"
    for prev, level in zip(" abcdefgh", "abcdefghi", strict=True)
)
"""Billion laughs: 9**9 strings once its aliases are expanded, in 757 bytes."""


# -- building requests -----------------------------------------------------------------------

Member = tuple[tarfile.TarInfo, bytes | None]


def reg(name: str, content: bytes = b"print('never runs')\n", mode: int = 0o644) -> Member:
    info = tarfile.TarInfo(name)
    info.size, info.mode = len(content), mode
    return info, content


def link(name: str, target: str, kind: bytes = tarfile.SYMTYPE) -> Member:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    return info, None


def special(name: str, kind: bytes) -> Member:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.devmajor, info.devminor = 1, 3
    return info, None


def pax(path: str, content: bytes = b"") -> Member:
    """A file whose name is carried by a PAX record (any length, a NUL)."""
    info = tarfile.TarInfo("placeholder")
    info.pax_headers = {"path": path}
    info.size = len(content)
    return info, content


def tar(*members: Member, compress: str = "gz") -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for info, content in members:
            archive.addfile(info, io.BytesIO(content) if content is not None else None)
    data = raw.getvalue()
    if compress == "gz":
        return gzip.compress(data, mtime=0)
    if compress == "bz2":
        import bz2

        return bz2.compress(data)
    return data


def context(*members: Member) -> bytes:
    """A context: ``train.py`` and ``members``."""
    return tar(reg("train.py"), *members)


def gzip_of_zeros(zeros: int, *, prefix: bytes = b"", suffix: bytes = b"") -> bytes:
    """A valid gzip file of ``prefix``, ``zeros`` zero bytes and ``suffix``, built without
    holding the zeros: after a full flush the compressor forgets what came before, so every
    MiB of zeros compresses to the same block, which is repeated."""
    deflate = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    chunk = bytes(MIB)
    head = deflate.compress(prefix) + deflate.flush(zlib.Z_FULL_FLUSH)
    block = deflate.compress(chunk) + deflate.flush(zlib.Z_FULL_FLUSH)
    tail = deflate.compress(suffix) + deflate.flush()
    crc = zlib.crc32(prefix)
    for _ in range(zeros // MIB):
        crc = zlib.crc32(chunk, crc)
    crc = zlib.crc32(suffix, crc)
    size = len(prefix) + zeros + len(suffix)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
    return header + head + block * (zeros // MIB) + tail + struct.pack("<II", crc, size % 2**32)


def ustar_header(name: bytes, size: int = 0) -> bytes:
    header = bytearray(512)
    header[: len(name)] = name
    header[100:108] = b"0000644\0"
    header[108:124] = b"0000000\0" * 2
    header[124:136] = b"%011o\0" % size
    header[136:148] = b"00000000000\0"
    header[148:156] = b" " * 8
    header[156:157] = tarfile.REGTYPE
    header[257:265] = b"ustar\x0000"
    header[148:156] = b"%06o\0 " % sum(header)
    return bytes(header)


def many_empty_files(count: int) -> bytes:
    gz = zlib.compressobj(1, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    out = [gz.compress(b"".join(ustar_header(b"f%07d" % i) for i in range(count)))]
    out.append(gz.compress(bytes(1024)) + gz.flush())
    return b"".join(out)


TRAIN = context()


@dataclass(frozen=True)
class Env:
    """What the corpus aims at: the master's home, the root its admin allows for checkpoint
    storage, and a loopback URL that plays a remote object store."""

    home: Path
    allowed: Path
    endpoint: str


Request = dict[str, Any]
"""Arguments of ``httpx.Client.request``."""


def experiment(
    config: str | bytes, ctx: bytes | None = None, fields: list[tuple[str, str]] | None = None
) -> Request:
    files: list[tuple[str, Any]] = [("config", (None, config))]
    files += [(name, (None, value)) for name, value in fields or []]
    files.append(("context", ("context.tar.gz", TRAIN if ctx is None else ctx, "application/gzip")))
    return {"method": "POST", "url": "/api/v1/experiments", "files": files}


def config(**changes: Any) -> str:
    """BASE with ``changes`` merged in (a value of None removes the key)."""
    merged: dict[str, Any] = json.loads(json.dumps(BASE))
    for key, value in changes.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return yaml.safe_dump(merged, sort_keys=False)


def searcher(**changes: Any) -> str:
    return config(searcher={**BASE["searcher"], **changes})


def hparams(space: Any, **search: Any) -> str:
    return config(hyperparameters=space, searcher={**BASE["searcher"], **search})


def storage(**spec: Any) -> str:
    return config(checkpoint_storage=spec)


def pai(job: dict[str, Any] | bytes) -> Request:
    body = job if isinstance(job, bytes) else yaml.safe_dump(job, sort_keys=False).encode()
    return {
        "method": "POST",
        "url": "/api/v2/jobs",
        "content": body,
        "headers": {"Content-Type": "text/yaml"},
    }


def pai_job(**changes: Any) -> dict[str, Any]:
    job: dict[str, Any] = json.loads(json.dumps(PAI_BASE))
    job.update(changes)
    return job


def pai_role(**changes: Any) -> dict[str, Any]:
    role = {**PAI_BASE["taskRoles"]["worker"], **changes}
    return pai_job(taskRoles={"worker": role})


def job(text: str | bytes, kind: str = "job") -> Request:
    files = [("config", (None, text)), ("kind", (None, kind))]
    return {"method": "POST", "url": "/api/v1/jobs", "files": files}


def nni(ctx: bytes | None = None, **changes: Any) -> Request:
    merged = {**NNI_BASE, **changes}
    merged = {k: v for k, v in merged.items() if v is not None}
    # As JSON (which YAML reads): PyYAML's writer recurses too deep for the deepest spaces.
    return experiment(json.dumps(merged, indent=1), ctx)


def space(**params: Any) -> Request:
    return nni(searchSpace=params)


# -- the corpus ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    name: str
    group: str
    build: Callable[[], Request]


def corpus(env: Env) -> list[Case]:
    """Every hostile submission, grouped; built when sent."""
    cases: list[Case] = []

    def add(group: str, name: str, build: Callable[[], Request]) -> None:
        cases.append(Case(name, group, build))

    # Encodings and sizes of the config text.
    g = "config text"
    add(
        g,
        "non-UTF-8 config (latin-1)",
        lambda: experiment((BASE_TEXT + "description: caf\xe9\n").encode("latin-1")),
    )
    add(g, "UTF-16 config with a BOM", lambda: experiment(BASE_TEXT.encode("utf-16")))
    add(
        g,
        "config over the 8 MiB limit",
        lambda: experiment(BASE_TEXT + "description: " + "d" * (9 * MIB)),
    )
    add(g, "NUL character in the config", lambda: experiment(BASE_TEXT + "description: a\x00b\n"))
    add(g, "NUL escaped in a YAML string", lambda: experiment(BASE_TEXT + 'description: "a\\0b"\n'))
    add(g, "lone surrogate", lambda: experiment(BASE_TEXT + 'description: "\\udc80"\n'))
    add(g, "C1 control character", lambda: experiment(BASE_TEXT.replace("hostile", "caf\x80")))
    add(g, "empty config", lambda: experiment(""))
    add(g, "config of whitespace", lambda: experiment("   \n\t\n"))
    add(g, "config is null", lambda: experiment("null\n"))
    add(g, "config is a list", lambda: experiment("- a\n- b\n"))
    add(g, "config is a string", lambda: experiment("just words\n"))
    add(g, "config is a number", lambda: experiment("42\n"))
    add(g, "invalid JSON", lambda: experiment('{"entrypoint": '))
    add(g, "unclosed flow mapping", lambda: experiment("searcher: {name: single\n"))
    add(g, "tab indentation", lambda: experiment("searcher:\n\tname: single\n"))
    add(g, "several YAML documents", lambda: experiment(BASE_TEXT + "---\n" + BASE_TEXT))
    add(g, "1,000 YAML documents", lambda: experiment("---\na: 1\n" * 1000))
    add(g, "byte order mark then YAML", lambda: experiment("\ufeff" + BASE_TEXT))

    # YAML that would take the parser's memory or time.
    g = "YAML bombs and nesting"
    add(g, "billion laughs (9**9 aliases)", lambda: experiment(BASE_TEXT + BOMB))
    add(
        g,
        "aliases of aliases in hyperparameters",
        lambda: experiment(
            BASE_TEXT + "hyperparameters:\n  " + BOMB.replace("\n", "\n  ").replace("data:", "h:")
        ),
    )
    add(
        g,
        "merge-key bomb",
        lambda: experiment(
            BASE_TEXT
            + "a: &a {"
            + ", ".join(f"k{i}: {i}" for i in range(50))
            + "}\n"
            + "".join(
                f"b{i}: &b{i} {{<<: [{', '.join([f'*b{i - 1}' if i else '*a'] * 8)}]}}\n"
                for i in range(8)
            )
        ),
    )
    add(
        g,
        "flow lists 2,000 deep",
        lambda: experiment(BASE_TEXT + "data: " + "[" * 2000 + "]" * 2000),
    )
    add(
        g,
        "flow mappings 2,000 deep",
        lambda: experiment(BASE_TEXT + "data: " + "{a: " * 2000 + "1" + "}" * 2000),
    )
    add(
        g,
        "block mappings 500 deep",
        lambda: experiment(
            BASE_TEXT
            + "data:\n"
            + "".join(" " * (i + 1) + f"k{i}:\n" for i in range(500))
            + " " * 501
            + "x\n"
        ),
    )
    add(
        g,
        "JSON nested 100,000 deep",
        lambda: experiment('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}"),
    )
    add(g, "anchor used inside itself", lambda: experiment(BASE_TEXT + "data: &a {x: [*a]}\n"))
    add(
        g,
        "alias chain 80 long",
        lambda: experiment(
            BASE_TEXT
            + "data:\n"
            + "".join(f"  x{i}: &x{i} [{f'*x{i - 1}' if i else 1}]\n" for i in range(80))
        ),
    )
    add(g, "undefined alias", lambda: experiment(BASE_TEXT + "data: *nowhere\n"))
    add(
        g,
        "100,000 keys",
        lambda: experiment(
            BASE_TEXT + "data: {" + ", ".join(f"k{i}: {i}" for i in range(100_000)) + "}\n"
        ),
    )
    add(g, "a 6 MiB string", lambda: experiment(BASE_TEXT + "data: " + "x" * (6 * MIB) + "\n"))
    add(
        g,
        "python/object/apply tag",
        lambda: experiment(BASE_TEXT + "data: !!python/object/apply:os.system ['true']\n"),
    )
    add(g, "python/name tag", lambda: experiment(BASE_TEXT + "data: !!python/name:os.system\n"))
    add(g, "binary tag", lambda: experiment(BASE_TEXT + "data: !!binary aGVsbG8=\n"))
    add(g, "bad timestamp tag", lambda: experiment(BASE_TEXT + "data: !!timestamp nope\n"))
    add(g, "custom tag", lambda: experiment(BASE_TEXT + "data: !evil {x: 1}\n"))
    add(g, "duplicate keys", lambda: experiment(BASE_TEXT + "max_restarts: 5\n"))
    add(g, "complex mapping key", lambda: experiment(BASE_TEXT + "? [a, b]\n: 1\n"))
    add(g, "set type", lambda: experiment(BASE_TEXT + "labels: !!set {a, b}\n"))

    # Numbers beyond what the database or the searchers hold.
    g = "numbers"
    add(g, "5,000-digit integer", lambda: experiment(BASE_TEXT + "data: {n: " + "9" * 5000 + "}\n"))
    add(g, "max_restarts 2**63", lambda: experiment(config(max_restarts=2**63)))
    add(g, "max_restarts -1", lambda: experiment(config(max_restarts=-1)))
    add(g, "max_restarts 1.5", lambda: experiment(config(max_restarts=1.5)))
    add(
        g,
        "max_restarts as hex beyond 64 bits",
        lambda: experiment(
            BASE_TEXT.replace("max_restarts: 0", "max_restarts: 0xFFFFFFFFFFFFFFFFFFFF")
        ),
    )
    add(
        g,
        "NaN bound",
        lambda: experiment(
            BASE_TEXT + "hyperparameters: {lr: {type: double, minval: .nan, maxval: 1}}\n"
        ),
    )
    add(
        g,
        "infinite log bound",
        lambda: experiment(
            BASE_TEXT + "hyperparameters: {lr: {type: log, minval: -.inf, maxval: 1}}\n"
        ),
    )
    add(
        g,
        "1e400 (a float overflow)",
        lambda: experiment(
            BASE_TEXT + "hyperparameters: {lr: {type: double, minval: 0, maxval: 1e400}}\n"
        ),
    )
    add(
        g,
        "log power overflow",
        lambda: experiment(hparams({"lr": {"type": "log", "minval": 1, "maxval": 999}})),
    )
    add(g, "NaN constant", lambda: experiment(BASE_TEXT + "hyperparameters: {x: .nan}\n"))
    add(g, "seed 2**40", lambda: experiment(config(reproducibility={"experiment_seed": 2**40})))
    add(
        g,
        "slots_per_trial 10**12",
        lambda: experiment(config(resources={"slots_per_trial": 10**12})),
    )
    add(g, "slots_per_trial -4", lambda: experiment(config(resources={"slots_per_trial": -4})))
    add(g, "max_slots 10**11", lambda: experiment(config(resources={"max_slots": 10**11})))
    add(g, "priority 10**9", lambda: experiment(config(resources={"priority": 10**9})))
    add(
        g,
        "max_trials 10**9",
        lambda: experiment(
            config(
                searcher={
                    "name": "random",
                    "metric": "loss",
                    "max_trials": 10**9,
                    "max_length": {"batches": 1},
                }
            )
        ),
    )
    add(
        g,
        "max_trials 0",
        lambda: experiment(
            config(
                searcher={
                    "name": "random",
                    "metric": "loss",
                    "max_trials": 0,
                    "max_length": {"batches": 1},
                }
            )
        ),
    )
    add(g, "max_length -1", lambda: experiment(searcher(max_length={"batches": -1})))
    add(g, "max_length 2**40", lambda: experiment(searcher(max_length={"batches": 2**40})))
    add(g, "max_length 0", lambda: experiment(searcher(max_length={"batches": 0})))
    add(
        g,
        "min_validation_period 10**10",
        lambda: experiment(config(min_validation_period={"batches": 10**10})),
    )
    add(g, "max_duration -5", lambda: experiment(config(max_duration="-5s")))
    add(
        g,
        "100,000 trials with no concurrency limit",
        lambda: experiment(
            config(
                searcher={
                    "name": "random",
                    "metric": "loss",
                    "max_trials": 100_000,
                    "max_concurrent_trials": 0,
                    "max_length": {"batches": 1},
                }
            )
        ),
    )

    # Wrong types everywhere.
    g = "wrong types"
    add(g, "entrypoint is a number", lambda: experiment(config(entrypoint=5)))
    add(g, "entrypoint is a list of numbers", lambda: experiment(config(entrypoint=[1, 2])))
    add(g, "entrypoint is empty", lambda: experiment(config(entrypoint="")))
    add(g, "entrypoint is a mapping", lambda: experiment(config(entrypoint={"a": 1})))
    add(g, "entrypoint of 1 MiB", lambda: experiment(config(entrypoint="python3 " + "a" * MIB)))
    add(g, "no entrypoint", lambda: experiment(config(entrypoint=None)))
    add(g, "no searcher", lambda: experiment(config(searcher=None)))
    add(g, "searcher is a string", lambda: experiment(config(searcher="random")))
    add(g, "unknown searcher", lambda: experiment(searcher(name="quantum")))
    add(g, "empty metric name", lambda: experiment(searcher(metric="")))
    add(g, "metric name with NUL", lambda: experiment(searcher(metric="lo\x00ss")))
    add(g, "metric name of 10,000 characters", lambda: experiment(searcher(metric="m" * 10_000)))
    add(g, "metric is a list", lambda: experiment(searcher(metric=["loss"])))
    add(g, "smaller_is_better is a string", lambda: experiment(searcher(smaller_is_better="maybe")))
    add(g, "name is a mapping", lambda: experiment(config(name={"a": 1})))
    add(g, "name of 600,000 characters", lambda: experiment(config(name="n" * 600_000)))
    add(g, "labels is a string", lambda: experiment(config(labels="a,b")))
    add(g, "label with NUL", lambda: experiment(config(labels=["a\x00b"])))
    add(g, "500 labels", lambda: experiment(config(labels=["l"] * 500)))
    add(g, "description is a list", lambda: experiment(config(description=["a"])))
    add(g, "resources is a list", lambda: experiment(config(resources=[1])))
    add(
        g,
        "slots_per_trial is a string",
        lambda: experiment(config(resources={"slots_per_trial": "two"})),
    )
    add(
        g,
        "unknown resource pool",
        lambda: experiment(config(resources={"resource_pool": "nowhere"})),
    )
    add(g, "max_restarts is a string", lambda: experiment(config(max_restarts="three")))
    add(g, "max_restarts is true", lambda: experiment(config(max_restarts=True)))
    add(
        g,
        "environment variables is a number",
        lambda: experiment(config(environment={"environment_variables": 5})),
    )
    add(
        g,
        "environment variable with NUL",
        lambda: experiment(config(environment={"environment_variables": ["A=b\x00c"]})),
    )
    add(
        g,
        "environment variable without =",
        lambda: experiment(config(environment={"environment_variables": ["JUSTANAME"]})),
    )
    add(
        g,
        "environment variable with an empty name",
        lambda: experiment(config(environment={"environment_variables": ["=value"]})),
    )
    add(
        g,
        "secret environment variable without a value",
        lambda: experiment(
            config(environment={"environment_variables": [{"name": "T", "secret": True}]})
        ),
    )
    add(
        g,
        "bind mount of /",
        lambda: experiment(config(bind_mounts=[{"host_path": "/", "container_path": "/host"}])),
    )
    add(
        g,
        "bind mount of the master's home",
        lambda: experiment(
            config(bind_mounts=[{"host_path": str(env.home), "container_path": "/home"}])
        ),
    )
    add(
        g,
        "bind mount with a relative path",
        lambda: experiment(config(bind_mounts=[{"host_path": "../..", "container_path": "x"}])),
    )
    add(
        g,
        "image name with a newline",
        lambda: experiment(config(environment={"image": "python\n:evil"})),
    )

    # Keys nothing reads.
    g = "unknown keys"
    add(g, "unknown top-level key", lambda: experiment(config(evil=True)))
    add(g, "misspelt max_restarts", lambda: experiment(config(max_restart=3)))
    add(g, "unknown key in the searcher", lambda: experiment(searcher(turbo=True)))
    add(
        g,
        "unknown key in a hyperparameter",
        lambda: experiment(hparams({"x": {"type": "int", "minval": 0, "maxval": 3, "evil": 1}})),
    )
    add(g, "unknown key in resources", lambda: experiment(config(resources={"gpus_please": 8})))
    add(
        g,
        "unknown key in checkpoint_storage",
        lambda: experiment(storage(type="shared_fs", host_path=str(env.allowed), evil=1)),
    )
    add(g, "key with NUL", lambda: experiment(BASE_TEXT + '"ev\\0il": 1\n'))
    add(g, "key of 100,000 characters", lambda: experiment(BASE_TEXT + "k" * 100_000 + ": 1\n"))

    # Hyperparameters and searches.
    g = "hyperparameters and searches"
    add(
        g,
        "minval above maxval",
        lambda: experiment(hparams({"x": {"type": "double", "minval": 2, "maxval": 1}})),
    )
    add(
        g,
        "int range with float bounds",
        lambda: experiment(hparams({"x": {"type": "int", "minval": 0.5, "maxval": 3.5}})),
    )
    add(g, "unknown hyperparameter type", lambda: experiment(hparams({"x": {"type": "quantum"}})))
    add(
        g,
        "log base 1",
        lambda: experiment(hparams({"x": {"type": "log", "minval": -3, "maxval": 0, "base": 1}})),
    )
    add(
        g,
        "log base -10",
        lambda: experiment(hparams({"x": {"type": "log", "minval": -3, "maxval": 0, "base": -10}})),
    )
    add(
        g,
        "categorical with no values",
        lambda: experiment(hparams({"x": {"type": "categorical", "vals": []}})),
    )
    add(
        g,
        "categorical of 200,000 values",
        lambda: experiment(hparams({"x": {"type": "categorical", "vals": list(range(200_000))}})),
    )
    add(g, "hyperparameter name of 1,000 characters", lambda: experiment(hparams({"h" * 1000: 1})))
    add(
        g,
        "hyperparameter name with a dot",
        lambda: experiment(hparams({"a.b": {"type": "int", "minval": 0, "maxval": 1}})),
    )
    add(
        g,
        "hyperparameters nested 100 deep",
        lambda: experiment(
            BASE_TEXT
            + "hyperparameters: "
            + "{a: " * 100
            + "{type: int, minval: 0, maxval: 1}"
            + "}" * 100
            + "\n"
        ),
    )
    add(
        g,
        "grid of 10**12 points",
        lambda: experiment(
            config(
                hyperparameters={
                    f"h{i}": {"type": "double", "minval": 0, "maxval": 1, "count": 1000}
                    for i in range(4)
                },
                searcher={"name": "grid", "metric": "loss", "max_length": {"batches": 1}},
            )
        ),
    )
    add(
        g,
        "grid of 10**60 points",
        lambda: experiment(
            config(
                hyperparameters={
                    f"h{i}": {"type": "int", "minval": 0, "maxval": 10**6, "count": 10**6}
                    for i in range(10)
                },
                searcher={"name": "grid", "metric": "loss", "max_length": {"batches": 1}},
            )
        ),
    )
    add(
        g,
        "grid count 0",
        lambda: experiment(
            config(
                hyperparameters={"x": {"type": "double", "minval": 0, "maxval": 1, "count": 0}},
                searcher={"name": "grid", "metric": "loss", "max_length": {"batches": 1}},
            )
        ),
    )
    add(
        g,
        "grid over a continuous range without a count",
        lambda: experiment(
            config(
                hyperparameters={"x": {"type": "double", "minval": 0, "maxval": 1}},
                searcher={"name": "grid", "metric": "loss", "max_length": {"batches": 1}},
            )
        ),
    )
    add(
        g,
        "async_halving divisor 1",
        lambda: experiment(
            config(
                searcher={
                    "name": "async_halving",
                    "metric": "loss",
                    "num_rungs": 3,
                    "divisor": 1,
                    "max_trials": 4,
                    "max_length": {"batches": 9},
                }
            )
        ),
    )
    add(
        g,
        "adaptive_asha 1,000 rungs",
        lambda: experiment(
            config(
                searcher={
                    "name": "adaptive_asha",
                    "metric": "loss",
                    "max_rungs": 1000,
                    "max_trials": 4,
                    "max_length": {"batches": 9},
                }
            )
        ),
    )
    add(
        g,
        "pbt population 0",
        lambda: experiment(
            config(
                searcher={
                    "name": "pbt",
                    "metric": "loss",
                    "population_size": 0,
                    "num_rounds": 2,
                    "length_per_round": {"batches": 1},
                    "replace_function": {"truncate_fraction": 0.5},
                    "explore_function": {"resample_probability": 0.5, "perturb_factor": 0.2},
                }
            )
        ),
    )
    add(
        g,
        "custom searcher in a module that is not there",
        lambda: experiment(
            config(
                searcher={
                    "name": "custom",
                    "metric": "loss",
                    "unit": "batches",
                    "module": "no.such.module",
                }
            )
        ),
    )
    add(
        g,
        "source checkpoint that does not exist",
        lambda: experiment(searcher(source_checkpoint_uuid="00000000-0000-0000-0000-000000000000")),
    )
    add(g, "source trial 2**31", lambda: experiment(searcher(source_trial_id=2**31)))
    add(
        g,
        "source checkpoint named by a path",
        lambda: experiment(searcher(source_checkpoint_uuid="../../assay.db")),
    )

    # Checkpoint storage: the master reads and deletes there with its own rights.
    g = "checkpoint storage"
    home = env.home
    add(
        g,
        "storage is the master's home",
        lambda: experiment(storage(type="shared_fs", host_path=str(home))),
    )
    add(
        g,
        "storage holds the master's home",
        lambda: experiment(storage(type="shared_fs", host_path=str(home.parent))),
    )
    add(
        g,
        "storage inside the master's home (run)",
        lambda: experiment(storage(type="shared_fs", host_path=str(home / "run"))),
    )
    add(
        g,
        "storage reaching the home by ..",
        lambda: experiment(
            storage(type="shared_fs", host_path=str(env.allowed), storage_path=f"../{home.name}")
        ),
    )
    add(
        g,
        "storage_path escaping by ..",
        lambda: experiment(
            storage(type="shared_fs", host_path=str(env.allowed), storage_path="../../..")
        ),
    )
    add(g, "storage at /", lambda: experiment(storage(type="shared_fs", host_path="/")))
    add(g, "storage at /etc", lambda: experiment(storage(type="shared_fs", host_path="/etc")))
    add(
        g,
        "storage at a relative path",
        lambda: experiment(storage(type="shared_fs", host_path="relative/dir")),
    )
    add(
        g,
        "storage outside the allowed roots",
        lambda: experiment(storage(type="shared_fs", host_path="/tmp/elsewhere-assay-reliability")),
    )
    add(
        g,
        "directory storage in the master's home",
        lambda: experiment(storage(type="directory", container_path=str(home))),
    )
    add(g, "unknown storage type", lambda: experiment(storage(type="ftp", host="x")))
    add(g, "shared_fs without host_path", lambda: experiment(storage(type="shared_fs")))
    add(
        g,
        "storage with NUL in the path",
        lambda: experiment(storage(type="shared_fs", host_path=f"{env.allowed}/a\x00b")),
    )
    add(
        g,
        "s3 at a remote endpoint (loopback stand-in)",
        lambda: experiment(storage(type="s3", bucket="b", endpoint_url=env.endpoint)),
    )
    add(
        g,
        "s3 at the instance-metadata address",
        lambda: experiment(storage(type="s3", bucket="b", endpoint_url="http://169.254.169.254")),
    )
    add(
        g,
        "s3 at a file:// URL",
        lambda: experiment(storage(type="s3", bucket="b", endpoint_url="file:///etc/passwd")),
    )
    add(
        g,
        "s3 endpoint with credentials in the URL",
        lambda: experiment(
            storage(type="s3", bucket="b", endpoint_url="http://user:pass@127.0.0.1:1")
        ),
    )
    add(g, "s3 bucket name with a slash", lambda: experiment(storage(type="s3", bucket="../b")))
    add(
        g,
        "azure account_url on loopback",
        lambda: experiment(storage(type="azure", container="c", account_url=env.endpoint)),
    )
    add(g, "gcs with an empty bucket", lambda: experiment(storage(type="gcs", bucket="")))

    # The form around the config.
    g = "the submission form"
    add(
        g,
        "override without =",
        lambda: experiment(BASE_TEXT, fields=[("overrides", "max_restarts")]),
    )
    add(
        g,
        "override of an unknown path",
        lambda: experiment(BASE_TEXT, fields=[("overrides", "no.such.key=1")]),
    )
    add(
        g, "override with NUL", lambda: experiment(BASE_TEXT, fields=[("overrides", "name=a\x00b")])
    )
    add(
        g,
        "override over 1 MiB",
        lambda: experiment(BASE_TEXT, fields=[("overrides", "description=" + "d" * (2 * MIB))]),
    )
    add(
        g,
        "10,000 overrides",
        lambda: experiment(BASE_TEXT, fields=[("overrides", "max_restarts=1")] * 10_000),
    )
    add(
        g,
        "activate is neither true nor false",
        lambda: experiment(BASE_TEXT, fields=[("activate", "maybe")]),
    )
    add(g, "notes over 1 MiB", lambda: experiment(BASE_TEXT, fields=[("notes", "n" * (2 * MIB))]))
    add(
        g,
        "original_config over 1 MiB",
        lambda: experiment(BASE_TEXT, fields=[("original_config", "o" * (2 * MIB))]),
    )
    add(
        g,
        "no context part",
        lambda: {
            "method": "POST",
            "url": "/api/v1/experiments",
            "files": [("config", (None, BASE_TEXT))],
        },
    )
    add(
        g,
        "two context parts",
        lambda: {
            "method": "POST",
            "url": "/api/v1/experiments",
            "files": [
                ("config", (None, BASE_TEXT)),
                ("context", ("a.tar.gz", TRAIN, "application/gzip")),
                ("context", ("b.tar.gz", TRAIN, "application/gzip")),
            ],
        },
    )
    add(
        g,
        "no config field",
        lambda: {
            "method": "POST",
            "url": "/api/v1/experiments",
            "files": [("context", ("c.tar.gz", TRAIN, "application/gzip"))],
        },
    )
    add(
        g,
        "config sent as a file part",
        lambda: {
            "method": "POST",
            "url": "/api/v1/experiments",
            "files": [
                ("config", ("c.yaml", BASE_TEXT.encode(), "text/yaml")),
                ("context", ("c.tar.gz", TRAIN, "application/gzip")),
            ],
        },
    )
    add(
        g,
        "JSON body instead of a form",
        lambda: {"method": "POST", "url": "/api/v1/experiments", "json": {"config": BASE_TEXT}},
    )
    add(
        g,
        "multipart without a boundary",
        lambda: {
            "method": "POST",
            "url": "/api/v1/experiments",
            "content": b"--x\r\n\r\n",
            "headers": {"Content-Type": "multipart/form-data"},
        },
    )
    add(
        g,
        "multipart cut off mid-part",
        lambda: {
            "method": "POST",
            "url": "/api/v1/experiments",
            "content": b'--b\r\nContent-Disposition: form-data; name="config"\r\n\r\nentry',
            "headers": {"Content-Type": "multipart/form-data; boundary=b"},
        },
    )
    add(g, "20,000 form fields", lambda: experiment(BASE_TEXT, fields=[("notes", "n")] * 20_000))
    add(
        g,
        "Content-Length larger than the body",
        lambda: {
            # Sent over a socket as it stands: an HTTP client refuses to send such a request.
            "raw": b"POST /api/v1/experiments HTTP/1.1\r\n"
            b"Content-Type: multipart/form-data; boundary=b\r\n"
            + b"Content-Length: %d\r\n" % GIB
            + b"\r\n"
            + b"x" * 10
        },
    )
    add(g, "an OpenPAI job sent as an experiment", lambda: experiment(yaml.safe_dump(PAI_BASE)))

    # Context archives (a valid config each).
    g = "context archives"
    add(g, "absolute path", lambda: experiment(BASE_TEXT, context(reg(f"{home}/escaped"))))
    add(
        g,
        "absolute path /etc/cron.d",
        lambda: experiment(BASE_TEXT, context(reg("/etc/cron.d/evil"))),
    )
    add(g, ".. path", lambda: experiment(BASE_TEXT, context(reg("../escaped"))))
    add(g, ".. inside a path", lambda: experiment(BASE_TEXT, context(reg("a/../../escaped"))))
    add(
        g,
        "symlink to /etc/passwd",
        lambda: experiment(BASE_TEXT, context(link("passwd", "/etc/passwd"))),
    )
    add(
        g,
        "symlink to the master's home",
        lambda: experiment(BASE_TEXT, context(link("home", str(home)))),
    )
    add(g, "symlink to ..", lambda: experiment(BASE_TEXT, context(link("up", ".."))))
    add(
        g,
        "file written through a symlink",
        lambda: experiment(BASE_TEXT, context(link("here", "."), reg("here/x"))),
    )
    add(
        g,
        "symlink made to escape by a later one",
        lambda: experiment(BASE_TEXT, context(link("a", "p/.."), link("p", "."))),
    )
    add(g, "symlink loop", lambda: experiment(BASE_TEXT, context(link("a", "b"), link("b", "a"))))
    add(
        g,
        "hard link out",
        lambda: experiment(BASE_TEXT, context(link("h", "../escaped", tarfile.LNKTYPE))),
    )
    add(
        g,
        "hard link to the master's database",
        lambda: experiment(BASE_TEXT, context(link("h", str(home / "assay.db"), tarfile.LNKTYPE))),
    )
    add(
        g,
        "hard link to a file not in the archive",
        lambda: experiment(BASE_TEXT, context(link("h", "elsewhere.txt", tarfile.LNKTYPE))),
    )
    add(
        g,
        "character device",
        lambda: experiment(BASE_TEXT, context(special("null", tarfile.CHRTYPE))),
    )
    add(g, "block device", lambda: experiment(BASE_TEXT, context(special("sda", tarfile.BLKTYPE))))
    add(g, "fifo", lambda: experiment(BASE_TEXT, context(special("pipe", tarfile.FIFOTYPE))))
    add(
        g,
        "duplicate members",
        lambda: experiment(BASE_TEXT, context(reg("train.py", b"print('second')\n"))),
    )
    add(
        g,
        "file replaced by a symlink out",
        lambda: experiment(BASE_TEXT, context(reg("config.py"), link("config.py", ".."))),
    )
    add(
        g,
        "directory replaced by a symlink out",
        lambda: experiment(BASE_TEXT, context(reg("pkg/x.py"), link("pkg", ".."))),
    )
    add(
        g,
        "NUL in a member name",
        lambda: experiment(BASE_TEXT, context(pax("train.py\x00/etc/passwd"))),
    )
    add(
        g,
        "path of 5,000 bytes",
        lambda: experiment(BASE_TEXT, context(pax("/".join(["d" * 199] * 25) + "d"))),
    )
    add(g, "name of 300 bytes", lambda: experiment(BASE_TEXT, context(pax("n" * 300))))
    add(
        g,
        "path 200 directories deep",
        lambda: experiment(BASE_TEXT, context(pax("/".join(["d"] * 200)))),
    )
    add(
        g,
        "setuid file",
        lambda: experiment(BASE_TEXT, context(reg("suid", b"#!/bin/sh\n", mode=0o4755))),
    )
    add(g, "member owned by root", lambda: experiment(BASE_TEXT, context(_owned_by_root())))
    add(g, "150,000 empty files", lambda: experiment(BASE_TEXT, many_empty_files(150_000)))
    add(g, "gzip bomb: 1 GiB of zeros", lambda: experiment(BASE_TEXT, gzip_of_zeros(GIB)))
    add(
        g,
        "tar bomb: one member of 1 GiB",
        lambda: experiment(
            BASE_TEXT,
            gzip_of_zeros(GIB, prefix=ustar_header(b"zeros.bin", GIB), suffix=bytes(1024)),
        ),
    )
    add(
        g,
        "gzip of gzip of zeros",
        lambda: experiment(BASE_TEXT, gzip.compress(gzip_of_zeros(64 * MIB))),
    )
    add(
        g,
        "upload of 120 MiB (a gzip of random bytes, stored)",
        lambda: experiment(BASE_TEXT, gzip.compress(os.urandom(120 * MIB), compresslevel=0)),
    )
    add(g, "truncated gzip", lambda: experiment(BASE_TEXT, TRAIN[: len(TRAIN) // 2]))
    add(g, "random bytes", lambda: experiment(BASE_TEXT, b"\x7fELF" + os.urandom(64 * 1024)))
    add(
        g,
        "gzip of random bytes",
        lambda: experiment(BASE_TEXT, gzip.compress(os.urandom(64 * 1024))),
    )
    add(g, "empty archive part", lambda: experiment(BASE_TEXT, b""))
    add(g, "zip instead of tar.gz", lambda: experiment(BASE_TEXT, _zip()))
    add(
        g,
        "tar.bz2 instead of tar.gz",
        lambda: experiment(BASE_TEXT, tar(reg("train.py"), compress="bz2")),
    )
    add(g, "plain tar", lambda: experiment(BASE_TEXT, tar(reg("train.py"), compress="")))
    add(g, "PAX size record of 2**70", lambda: experiment(BASE_TEXT, _pax_size()))

    # OpenPAI jobs (POST /api/v2/jobs, as OpenPAI's clients send them; and /api/v1/jobs).
    g = "OpenPAI jobs"
    add(g, "job name with a slash and ..", lambda: pai(pai_job(name="../etc/passwd")))
    add(g, "job name with spaces", lambda: pai(pai_job(name="my job")))
    add(g, "job name with NUL", lambda: pai(pai_job(name="a\x00b")))
    add(g, "job name of 1,000 characters", lambda: pai(pai_job(name="j" * 1000)))
    add(g, "job name empty", lambda: pai(pai_job(name="")))
    add(g, "job name is a number", lambda: pai(pai_job(name=5)))
    add(
        g,
        "duplicate task roles (duplicate YAML keys)",
        lambda: pai(DUPLICATE_ROLES),
    )
    add(
        g,
        "task role name with a dash",
        lambda: pai(pai_job(taskRoles={"bad-role": PAI_BASE["taskRoles"]["worker"]})),
    )
    add(g, "no task roles", lambda: pai(pai_job(taskRoles={})))
    add(g, "instances -1", lambda: pai(pai_role(instances=-1)))
    add(g, "instances 10**9", lambda: pai(pai_role(instances=10**9)))
    add(g, "commands is a string", lambda: pai(pai_role(commands="rm -rf /")))
    add(g, "commands empty", lambda: pai(pai_role(commands=[])))
    add(
        g, "gpu -1", lambda: pai(pai_role(resourcePerInstance={"gpu": -1, "cpu": 1, "memoryMB": 1}))
    )
    add(
        g,
        "memoryMB 10**15",
        lambda: pai(pai_role(resourcePerInstance={"gpu": 0, "cpu": 1, "memoryMB": 10**15})),
    )
    add(g, "dockerImage naming no prerequisite", lambda: pai(pai_role(dockerImage="nothing")))
    add(g, "protocolVersion 99", lambda: pai(pai_job(protocolVersion=99)))
    add(g, "type is not job", lambda: pai(pai_job(type="evil")))
    add(
        g,
        "template naming nothing",
        lambda: pai(pai_role(commands=["echo <% $parameters.nothing %>"])),
    )
    add(g, "unknown extras key", lambda: pai(pai_job(extras={"evil": True})))
    add(
        g,
        "teamwise_storage plugin",
        lambda: pai(
            pai_job(
                extras={
                    "com.microsoft.pai.runtimeplugin": [
                        {"plugin": "teamwise_storage", "parameters": {"storageConfigNames": ["x"]}}
                    ]
                }
            )
        ),
    )
    add(
        g,
        "job file not UTF-8",
        # Written by hand: PyYAML escapes what is not ASCII, which would leave the file ASCII.
        lambda: pai(yaml.safe_dump(PAI_BASE).encode() + b"description: caf\xe9\n"),
    )
    add(g, "job file a YAML bomb", lambda: pai(yaml.safe_dump(PAI_BASE).encode() + BOMB.encode()))
    add(
        g,
        "job file nested 2,000 deep",
        lambda: pai(yaml.safe_dump(PAI_BASE).encode() + b"data: " + b"[" * 2000 + b"]" * 2000),
    )
    add(
        g,
        "v1 JSON job with wrong types",
        lambda: pai(json.dumps({"jobName": 5, "image": [], "taskRoles": "x"}).encode()),
    )
    add(
        g,
        "v1 JSON job with taskNumber 10**9",
        lambda: pai(
            json.dumps(
                {
                    "jobName": "v1big",
                    "image": "python",
                    "taskRoles": [
                        {
                            "name": "w",
                            "taskNumber": 10**9,
                            "cpuNumber": 1,
                            "memoryMB": 100,
                            "gpuNumber": 0,
                            "command": "true",
                        }
                    ],
                }
            ).encode()
        ),
    )
    add(g, "empty job body", lambda: pai(b""))
    add(
        g,
        "job body of 20 MiB",
        lambda: pai(yaml.safe_dump(pai_job(description="d" * (20 * MIB))).encode()),
    )
    add(g, "the same job name twice (the second)", lambda: pai(pai_job(name="twice")))
    add(g, "job kind unknown on /api/v1/jobs", lambda: job(yaml.safe_dump(PAI_BASE), kind="evil"))
    add(
        g,
        "command config whose entrypoint is numbers",
        lambda: job(yaml.safe_dump({"entrypoint": [1, 2]}), kind="command"),
    )
    add(
        g,
        "generic task with a bind mount of /",
        lambda: job(
            yaml.safe_dump(
                {"entrypoint": "true", "bind_mounts": [{"host_path": "/", "container_path": "/h"}]}
            ),
            kind="generic",
        ),
    )

    # NNI configs.
    g = "NNI configs"
    add(g, "search space with an unknown _type", lambda: space(x={"_type": "evil", "_value": [1]}))
    add(g, "choice with no options", lambda: space(x={"_type": "choice", "_value": []}))
    add(g, "randint low above high", lambda: space(x={"_type": "randint", "_value": [10, 1]}))
    add(g, "uniform of strings", lambda: space(x={"_type": "uniform", "_value": ["a", "b"]}))
    add(g, "loguniform of a negative", lambda: space(x={"_type": "loguniform", "_value": [-1, 1]}))
    add(g, "quniform with q 0", lambda: space(x={"_type": "quniform", "_value": [0, 1, 0]}))
    add(g, "normal with sigma -1", lambda: space(x={"_type": "normal", "_value": [0, -1]}))
    add(g, "_value missing", lambda: space(x={"_type": "uniform"}))
    add(
        g, "layer_choice (classic NAS)", lambda: space(x={"_type": "layer_choice", "_value": ["a"]})
    )
    add(g, "choices nested 200 deep", lambda: nni(searchSpace=_nested_choice(200)))
    add(
        g,
        "search space of 100,000 parameters",
        lambda: nni(
            searchSpace={f"p{i}": {"_type": "uniform", "_value": [0, 1]} for i in range(100_000)}
        ),
    )
    add(
        g,
        "searchSpaceFile /etc/passwd",
        lambda: nni(searchSpace=None, searchSpaceFile="/etc/passwd"),
    )
    add(
        g,
        "searchSpaceFile escaping by ..",
        lambda: nni(searchSpace=None, searchSpaceFile="../../../../etc/passwd"),
    )
    add(
        g,
        "searchSpaceFile in the master's home",
        lambda: nni(searchSpace=None, searchSpaceFile=str(home / "admin-password")),
    )
    add(
        g,
        "searchSpaceFile not in the context",
        lambda: nni(searchSpace=None, searchSpaceFile="missing.json"),
    )
    add(
        g,
        "searchSpaceFile that is not JSON or YAML",
        lambda: nni(
            context(reg("space.json", b"\x00\xff{{{")),
            searchSpace=None,
            searchSpaceFile="space.json",
        ),
    )
    add(
        g,
        "searchSpaceFile that is a symlink out",
        lambda: nni(
            context(link("space.json", "/etc/passwd")),
            searchSpace=None,
            searchSpaceFile="space.json",
        ),
    )
    add(g, "trialCodeDirectory /", lambda: nni(trialCodeDirectory="/"))
    add(g, "trialCodeDirectory ..", lambda: nni(trialCodeDirectory="../.."))
    add(g, "maxTrialNumber -1", lambda: nni(maxTrialNumber=-1))
    add(g, "trialConcurrency 10**9", lambda: nni(trialConcurrency=10**9))
    add(g, "maxExperimentDuration 'forever'", lambda: nni(maxExperimentDuration="forever"))
    add(g, "unknown tuner", lambda: nni(tuner={"name": "Oracle"}))
    add(
        g,
        "customized tuner with an absolute codeDirectory",
        lambda: nni(tuner={"codeDirectory": "/etc", "className": "evil.Tuner"}),
    )
    add(
        g,
        "unknown optimize_mode",
        lambda: nni(tuner={"name": "TPE", "classArgs": {"optimize_mode": "sideways"}}),
    )
    add(
        g,
        "remote training service",
        lambda: nni(
            trainingService={
                "platform": "remote",
                "machineList": [{"host": "10.0.0.1", "user": "root"}],
            }
        ),
    )
    add(
        g,
        "v1 config with an unknown platform",
        lambda: experiment(
            yaml.safe_dump(
                {
                    "authorName": "x",
                    "experimentName": "v1",
                    "trialConcurrency": 1,
                    "maxTrialNum": 2,
                    "trainingServicePlatform": "moon",
                    "searchSpacePath": "space.json",
                    "tuner": {"builtinTunerName": "Random"},
                    "trial": {"command": "python3 train.py", "codeDir": "."},
                }
            )
        ),
    )
    add(g, "NNI config with NUL in trialCommand", lambda: nni(trialCommand="python3 \x00train.py"))
    return cases


def _owned_by_root() -> Member:
    info, content = reg("rootfile")
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info, content


def _zip() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as archive:
        archive.writestr("train.py", "print('never runs')\n")
    return buf.getvalue()


def _pax_size() -> bytes:
    info = tarfile.TarInfo("big")
    info.pax_headers = {"size": str(2**70)}
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as archive:
        archive.addfile(info, io.BytesIO(b""))
    return gzip.compress(raw.getvalue(), mtime=0)


def _nested_choice(depth: int) -> dict[str, Any]:
    inner: dict[str, Any] = {"_type": "uniform", "_value": [0, 1]}
    for i in range(depth):
        inner = {"_type": "choice", "_value": [{"_name": f"n{i}", "x": inner}]}
    return {"x": inner}


CONTROLS: dict[str, Callable[[Env], Request]] = {
    "a valid experiment": lambda env: experiment(BASE_TEXT),
    "a valid experiment storing under the allowed root": lambda env: experiment(
        storage(type="shared_fs", host_path=str(env.allowed))
    ),
    "a valid OpenPAI job": lambda env: pai(pai_job(name="control-job")),
    "a valid NNI config": lambda env: nni(),
}
"""Submissions that must be accepted: they show the corpus is refused for what it holds."""


# -- classifying answers ---------------------------------------------------------------------


@dataclass
class Answer:
    verdict: str
    status: int | None
    seconds: float
    why: str = ""


def classify(response: httpx.Response | None, seconds: float, error: str = "") -> Answer:
    if response is None:
        verdict = "hang" if error == "timeout" else "no answer"
        return Answer(verdict, None, seconds, error)
    status = response.status_code
    text = response.text
    if TRACEBACK.search(text):
        return Answer("traceback", status, seconds, text[:200])
    if status >= 500:
        return Answer("5xx", status, seconds, text[:200])
    if 200 <= status < 300:
        return Answer("accepted", status, seconds)
    problem = shape_problem(response)
    if problem:
        return Answer("refused, not cleanly", status, seconds, problem)
    body = response.json()["error"]
    said = [body["message"], *(f"{d.get('path', '')}: {d['message']}" for d in body["details"])]
    return Answer("refused cleanly", status, seconds, " | ".join(said)[:300])


def shape_problem(response: httpx.Response) -> str:
    """What is wrong with a 4xx answer's body, or "" when it is the API's error shape."""
    if not 400 <= response.status_code < 500:
        return f"status {response.status_code}"
    try:
        body = response.json()
    except ValueError:
        return f"not JSON: {response.text[:120]!r}"
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return f"no error object: {response.text[:120]!r}"
    message, kind, details = error.get("message"), error.get("type"), error.get("details")
    if not isinstance(message, str) or not isinstance(kind, str) or not isinstance(details, list):
        return f"error lacks type, message or details: {response.text[:160]!r}"
    if not message or "\n" in message:
        return f"message not one line: {message[:160]!r}"
    for detail in details:
        if not isinstance(detail, dict) or not isinstance(detail.get("message"), str):
            return f"a detail lacks its message: {str(detail)[:120]}"
        if "\n" in detail["message"]:
            return f"a detail of several lines: {detail['message'][:120]!r}"
    if len(response.text) > 4000:
        return f"answer of {len(response.text):,} bytes (an echo of the input?)"
    return ""


def send(url: str, request: Request, token: str) -> Answer:
    """``request`` on a connection of its own (an answer that closes its connection must not
    count against the next submission)."""
    started = time.monotonic()
    if "raw" in request:
        return send_raw(url, request["raw"], token)
    headers = {"Authorization": f"Bearer {token}", **request.pop("headers", {})}
    try:
        with httpx.Client(base_url=url, timeout=TIMEOUT) as http:
            response = http.request(**request, headers=headers)
    except httpx.TimeoutException:
        return classify(None, time.monotonic() - started, "timeout")
    except Exception as exc:  # whatever the client library raises: no answer to classify
        return classify(None, time.monotonic() - started, f"{type(exc).__name__}: {exc}")
    return classify(response, time.monotonic() - started)


def send_raw(url: str, head_and_body: bytes, token: str) -> Answer:
    """Bytes written to the master's socket as they stand (with its Host and the token's
    header added after the request line); the answer read until its declared length."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    line, rest = head_and_body.split(b"\r\n", 1)
    extra = f"Host: {host}:{port}\r\nAuthorization: Bearer {token}\r\n".encode()
    started = time.monotonic()
    data = b""
    try:
        with socket.create_connection((host, int(port)), timeout=TIMEOUT) as conn:
            conn.sendall(line + b"\r\n" + extra + rest)
            deadline = started + TIMEOUT
            while True:
                conn.settimeout(max(0.1, deadline - time.monotonic()))
                chunk = conn.recv(65536)
                data += chunk
                head, sep, body = data.partition(b"\r\n\r\n")
                length = re.search(rb"(?im)^content-length:\s*(\d+)", head)
                if not chunk or (sep and length and len(body) >= int(length[1])):
                    break
    except TimeoutError:
        if not data:
            return classify(None, time.monotonic() - started, "timeout")
    except OSError as exc:
        return classify(None, time.monotonic() - started, f"{type(exc).__name__}: {exc}")
    head, _, body = data.partition(b"\r\n\r\n")
    status = re.match(rb"HTTP/1\.[01] (\d{3})", head)
    if not status:
        return classify(None, time.monotonic() - started, f"not HTTP: {data[:80]!r}")
    response = httpx.Response(int(status[1]), content=body)
    return classify(response, time.monotonic() - started)


def rss_kib(pid: int) -> dict[str, int]:
    found = {}
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                found[key] = int(value.split()[0])
    return found


# -- the run ---------------------------------------------------------------------------------


@dataclass
class Tally:
    answers: dict[str, Answer] = field(default_factory=dict)

    def count(self) -> Counter[str]:
        return Counter(a.verdict for a in self.answers.values())

    def named(self, verdict: str) -> list[str]:
        return [n for n, a in self.answers.items() if a.verdict == verdict]


def run(part: Part, *, quick: bool) -> None:
    cluster = Cluster("hostile")
    allowed = cluster.root / "shared"
    allowed.mkdir()
    cluster.settings["allowed_checkpoint_storage"] = {"host_paths": [str(allowed)]}
    env = Env(cluster.home, allowed, "http://127.0.0.1:9")
    cases = corpus(env)
    if quick:
        cases = cases[::8]
    tally = Tally()
    controls: dict[str, Answer] = {}
    with running(cluster):
        cluster.start_master()
        token = cluster.add_user("mallory")
        assert cluster.master is not None
        before_kib = rss_kib(cluster.master.pid).get("VmRSS", 0)
        url = cluster.url
        # OpenPAI refuses a job name its user has used: the first "twice" is a valid job.
        send(url, pai(pai_job(name="twice")), token)
        for name, build in CONTROLS.items():
            controls[name] = send(url, build(env), token)
        for case in cases:
            try:
                request = case.build()
            except Exception as exc:  # the corpus's own mistake: said, never hidden
                part.fail(f"corpus case {case.name!r} could not be built: {exc!r}"[:300])
                continue
            answer = send(url, request, token)
            tally.answers[f"{case.group}: {case.name}"] = answer
            status = answer.status or "-"
            said = f"{answer.verdict:<20} {status:>4} {answer.seconds:5.2f}s"
            print(f"  {said}  {case.group}: {case.name}  [{answer.why[:150]}]", flush=True)
        alive = cluster.master.poll() is None and cluster.http.get("/api/v1/master").is_success
        memory = rss_kib(cluster.master.pid)
        after_kib, peak_kib = memory.get("VmRSS", 0), memory.get("VmHWM", 0)
        cli = cli_sample(cluster, token, env, quick=quick)
        tracebacks = cluster.tail("master", 10**8).count("Traceback")
    counts = tally.count()
    slow = sorted(
        ((a.seconds, n) for n, a in tally.answers.items() if a.seconds > 5.0), reverse=True
    )
    part.add(
        f"{len(cases)} hostile submissions (built by `_hostile.py`, grouped below) sent to a "
        "master without agents (SQLite; `allowed_checkpoint_storage` one directory), as a user "
        f"who is not an admin, each with a {TIMEOUT:.0f} s timeout; {len(CONTROLS)} valid "
        "submissions first, which must be accepted. Verdicts: *refused cleanly* = 4xx with "
        '`{"error": {"type", "message", "details"}}`, a one-line message, no traceback text, '
        "under 4,000 bytes; *accepted* = 2xx.\n"
    )
    part.add("| verdict | submissions |")
    part.add("|---|---|")
    for verdict in (
        "refused cleanly",
        "refused, not cleanly",
        "accepted",
        "5xx",
        "traceback",
        "hang",
        "no answer",
    ):
        part.add(f"| {verdict} | {counts.get(verdict, 0)} |")
    part.add(f"| **all** | {len(tally.answers)} |")
    part.add()
    by_group = Counter(c.group for c in cases)
    refused_group = Counter(
        c.group
        for c in cases
        if (a := tally.answers.get(f"{c.group}: {c.name}")) and a.verdict == "refused cleanly"
    )
    part.add("| group | refused cleanly / sent |")
    part.add("|---|---|")
    for group, total in by_group.items():
        part.add(f"| {group} | {refused_group[group]} / {total} |")
    part.add()
    part.add("Accepted (2xx), for the reader to judge:")
    part.add()
    for name in tally.named("accepted") or ["none"]:
        part.add(f"- {name}")
    part.add()
    for verdict in ("refused, not cleanly", "5xx", "traceback", "hang", "no answer"):
        for name in tally.named(verdict):
            answer = tally.answers[name]
            part.fail(f"hostile input {verdict}: {name} -> {answer.status} {answer.why}")
    for name, answer in controls.items():
        part.check(
            answer.verdict == "accepted", f"control refused: {name} -> {answer.status} {answer.why}"
        )
    part.check(alive, "the master no longer answers after the corpus")
    rss, after, peak = (m // 1024 for m in (before_kib, after_kib, peak_kib))
    part.add(
        f"- the master after the corpus: answering {alive}; VmRSS {rss} -> {after} MiB, "
        f"peak (VmHWM) {peak} MiB; {tracebacks} traceback(s) in its log"
    )
    accepted = sum(a.verdict == "accepted" for a in controls.values())
    part.add(f"- controls accepted: {accepted} of {len(controls)}")
    part.add(
        "- answers slower than 5 s: "
        + (", ".join(f"{n} ({s:.1f} s)" for s, n in slow) if slow else "none")
    )
    part.add()
    part.add(
        "Through the `assay` command, as the same user (a sample; *clean*: exit 1, stderr "
        "beginning `error:` in under 20 lines, no traceback):"
    )
    part.add()
    part.add("| submission | exit | seconds | verdict | stderr |")
    part.add("|---|---|---|---|---|")
    for name, (code, seconds, verdict, said) in cli.items():
        part.add(f"| {name} | {code} | {seconds:.1f} | {verdict} | {said} |")
        if verdict not in ("clean", "accepted"):
            part.fail(f"the command on hostile input: {name} -> {verdict} ({said})")


def cli_sample(
    cluster: Cluster, token: str, env: Env, *, quick: bool
) -> dict[str, tuple[int | None, float, str, str]]:
    """A sample of the corpus through the ``assay`` command, as the non-admin user."""
    work = cluster.root / "cli"
    work.mkdir()
    code = work / "code"
    code.mkdir()
    (code / "train.py").write_text("print('never runs')\n")
    out_link = work / "link-out"
    out_link.mkdir()
    (out_link / "train.py").write_text("print('never runs')\n")
    (out_link / "passwd").symlink_to("/etc/passwd")
    fifo = work / "fifo"
    fifo.mkdir()
    (fifo / "train.py").write_text("print('never runs')\n")
    os.mkfifo(fifo / "pipe")
    files = {
        "latin1.yaml": (BASE_TEXT + "description: caf\xe9\n").encode("latin-1"),
        "bomb.yaml": (BASE_TEXT + BOMB).encode(),
        "deep.yaml": (BASE_TEXT + "data: " + "[" * 2000 + "]" * 2000).encode(),
        "grid.yaml": config(
            hyperparameters={
                f"h{i}": {"type": "double", "minval": 0, "maxval": 1, "count": 1000}
                for i in range(4)
            },
            searcher={"name": "grid", "metric": "loss", "max_length": {"batches": 1}},
        ).encode(),
        "home.yaml": storage(type="shared_fs", host_path=str(env.home)).encode(),
        "big.yaml": (BASE_TEXT + "description: " + "d" * (9 * MIB) + "\n").encode(),
        "ok.yaml": BASE_TEXT.encode(),
        "job.yaml": yaml.safe_dump(pai_job(name="../evil")).encode(),
        "nni.yaml": yaml.safe_dump(
            {**NNI_BASE, "searchSpace": {"x": {"_type": "evil", "_value": [1]}}}
        ).encode(),
    }
    for name, data in files.items():
        (work / name).write_bytes(data)
    (code / "nni.yaml").write_bytes(files["nni.yaml"])
    runs = {
        "non-UTF-8 config": ["experiment", "create", str(work / "latin1.yaml"), str(code)],
        "billion laughs": ["experiment", "create", str(work / "bomb.yaml"), str(code)],
        "2,000-deep nesting": ["experiment", "create", str(work / "deep.yaml"), str(code)],
        "grid of 10**12 points": ["experiment", "create", str(work / "grid.yaml"), str(code)],
        "storage in the master's home": [
            "experiment",
            "create",
            str(work / "home.yaml"),
            str(code),
        ],
        "config over 8 MiB": ["experiment", "create", str(work / "big.yaml"), str(code)],
        "context with a symlink to /etc/passwd": [
            "experiment",
            "create",
            str(work / "ok.yaml"),
            str(out_link),
        ],
        "context with a fifo": ["experiment", "create", str(work / "ok.yaml"), str(fifo)],
        "OpenPAI job named ../evil": ["job", "submit", str(work / "job.yaml")],
        "NNI search space of an unknown _type": [
            "nni",
            "create",
            "--config",
            str(code / "nni.yaml"),
        ],
    }
    if quick:
        runs = dict(list(runs.items())[::3])
    env_vars = {**cluster.env, "ASSAY_USER_TOKEN": token, "COLUMNS": "160"}
    found: dict[str, tuple[int | None, float, str, str]] = {}
    for name, args in runs.items():
        started = time.monotonic()
        try:
            done = subprocess.run(
                [sys.executable, "-c", "from assay.cli import main; main()", *args],
                env=env_vars, capture_output=True, text=True, timeout=TIMEOUT * 2, check=False,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            found[name] = (None, time.monotonic() - started, "hang", "")
            continue
        seconds = time.monotonic() - started
        lines = done.stderr.strip().splitlines()
        said = (lines[0] if lines else "")[:140].replace("|", "\\|")
        if done.returncode == 0:
            verdict = "accepted"
        elif "Traceback" in done.stderr:
            verdict = "traceback"
        elif done.returncode == 1 and lines and lines[0].startswith("error:") and len(lines) < 20:
            verdict = "clean"
        else:
            verdict = f"not clean (exit {done.returncode}, {len(lines)} lines)"
        found[name] = (done.returncode, seconds, verdict, said)
    return found
