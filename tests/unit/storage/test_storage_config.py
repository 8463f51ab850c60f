"""storage_from_config: the JSON and model forms, Determined's path rules, missing libraries."""

from __future__ import annotations

import os
import posixpath
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from assay.errors import InvalidConfig
from assay.storage import (
    AVAILABLE_STORAGE_TYPES,
    DirectoryStorage,
    SharedFSStorage,
    StorageManager,
    shared_fs_path,
    storage_from_config,
)
from tests.corpus import corpus_dir


def test_shared_fs_joins_a_relative_storage_path_to_host_path() -> None:
    storage = storage_from_config(
        {"type": "shared_fs", "host_path": "/mnt/shared", "storage_path": "determined-cp"}
    )
    assert isinstance(storage, SharedFSStorage)
    assert storage.base == Path("/mnt/shared/determined-cp")


def test_shared_fs_without_storage_path_stores_in_host_path() -> None:
    storage = storage_from_config({"type": "shared_fs", "host_path": "/mnt/shared/"})
    assert isinstance(storage, SharedFSStorage)
    assert storage.base == Path("/mnt/shared")


def test_shared_fs_accepts_an_absolute_storage_path_inside_host_path() -> None:
    storage = storage_from_config(
        {"type": "shared_fs", "host_path": "/srv/ckpt", "storage_path": "/srv/ckpt/storage_path"}
    )
    assert isinstance(storage, SharedFSStorage)
    assert storage.base == Path("/srv/ckpt/storage_path")


@pytest.mark.parametrize(
    "storage_path",
    ["/storage_path", "../storage_path", "anywhere/../../storage_path", "/srv/ckptx/cp"],
)
def test_shared_fs_storage_path_outside_host_path_is_refused(storage_path: str) -> None:
    with pytest.raises(InvalidConfig) as caught:
        storage_from_config(
            {"type": "shared_fs", "host_path": "/srv/ckpt", "storage_path": storage_path}
        )
    (detail,) = caught.value.details
    assert detail.path == "checkpoint_storage.storage_path"
    assert "subdirectory of host_path" in detail.message
    assert storage_path in detail.message


def test_shared_fs_needs_an_absolute_host_path() -> None:
    with pytest.raises(InvalidConfig) as caught:
        storage_from_config({"type": "shared_fs", "host_path": "relative/dir"})
    assert [d.path for d in caught.value.details] == ["checkpoint_storage.host_path"]
    assert "absolute" in caught.value.details[0].message


def test_shared_fs_reports_every_problem_at_once() -> None:
    with pytest.raises(InvalidConfig) as caught:
        storage_from_config({"type": "shared_fs", "storage_path": 5})
    assert [d.path for d in caught.value.details] == [
        "checkpoint_storage.host_path",
        "checkpoint_storage.storage_path",
    ]


def test_directory_type_uses_container_path() -> None:
    storage = storage_from_config({"type": "directory", "container_path": "/ckpt"})
    assert isinstance(storage, DirectoryStorage)
    assert storage.base == Path("/ckpt")


@pytest.mark.parametrize(
    "cfg", [{"type": "directory"}, {"type": "directory", "container_path": "x"}]
)
def test_directory_type_needs_an_absolute_container_path(cfg: dict[str, Any]) -> None:
    with pytest.raises(InvalidConfig) as caught:
        storage_from_config(cfg)
    assert [d.path for d in caught.value.details] == ["checkpoint_storage.container_path"]


@pytest.mark.parametrize(
    ("kind", "module", "section"),
    [
        ("s3", "boto3", {"bucket": "b"}),
        ("gcs", "google.cloud.storage", {"bucket": "b"}),
        ("azure", "azure.storage.blob", {"container": "c", "connection_string": "x"}),
    ],
)
def test_object_store_without_its_library_is_refused_naming_the_extra_to_install(
    kind: str, module: str, section: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # what an uninstalled package looks like
    with pytest.raises(InvalidConfig) as caught:
        storage_from_config({"type": kind, **section})
    (detail,) = caught.value.details
    assert detail.path == "checkpoint_storage.type"
    assert detail.message == (
        f"storage type {kind!r} needs the {module} package, which is not installed here; "
        f"install it with: pip install 'assay[{kind}]'"
    )


def test_unknown_and_missing_types_are_refused() -> None:
    with pytest.raises(InvalidConfig, match="1 problem") as caught:
        storage_from_config({"type": "ftp"})
    assert caught.value.details[0].message == (
        "'ftp' is not a checkpoint storage type; use one of " + ", ".join(AVAILABLE_STORAGE_TYPES)
    )
    with pytest.raises(InvalidConfig) as caught:
        storage_from_config({}, where="cfg.storage")
    assert caught.value.details[0].path == "cfg.storage.type"
    assert "required" in caught.value.details[0].message


class _SharedFSModel(BaseModel):
    type: str = "shared_fs"
    host_path: str
    storage_path: str | None = None
    save_trial_best: int = 1


def test_a_config_model_with_attributes_is_accepted_like_its_json_form() -> None:
    storage = storage_from_config(_SharedFSModel(host_path="/data", storage_path="cp"))
    assert isinstance(storage, SharedFSStorage)
    assert storage.base == Path("/data/cp")


_segments = st.sampled_from(["a", "b", "..", ".", "cp", ""])


@settings(max_examples=200)
@given(
    host=st.lists(st.sampled_from(["mnt", "data", "x"]), min_size=0, max_size=3),
    rel=st.lists(_segments, min_size=0, max_size=5),
    absolute=st.booleans(),
)
def test_shared_fs_path_never_leaves_host_path(
    host: list[str], rel: list[str], absolute: bool
) -> None:
    host_path = "/" + "/".join(host)
    storage_path = "/".join(rel)
    if absolute:
        storage_path = posixpath.join(host_path, storage_path)
    try:
        base = shared_fs_path(host_path, storage_path)
    except InvalidConfig:
        lexical = posixpath.normpath(posixpath.join(host_path, storage_path))
        assert posixpath.relpath(lexical, posixpath.normpath(host_path)).startswith("..")
        return
    relative = os.path.relpath(base, posixpath.normpath(host_path))
    assert relative == "." or not relative.startswith("..")


# -- Determined's own schema test cases for shared_fs and cloud storage ----------------------


def _storage_cases() -> list[dict[str, Any]]:
    cases_dir = corpus_dir("determined", "schema-cases")
    found: list[dict[str, Any]] = []
    for path in sorted(cases_dir.glob("*.yaml")):
        for case in yaml.safe_load(path.read_text()) or []:
            body = case.get("case")
            if isinstance(body, dict) and body.get("type") in ("shared_fs", "s3", "gcs", "azure"):
                found.append(case)
            elif isinstance(body, dict) and isinstance(body.get("checkpoint_storage"), dict):
                found.append({**case, "case": body["checkpoint_storage"]})
    return found


def test_determined_schema_cases_for_checkpoint_storage_are_judged_alike() -> None:
    cases = _storage_cases()
    assert cases, "the corpus has no checkpoint-storage schema cases"
    judged = 0
    for case in cases:
        body = case["case"]
        errors = " ".join(
            str(e) for errs in (case.get("sanity_errors") or {}).values() for e in errs
        )
        if body["type"] != "shared_fs":
            if "prefix cannot contain" in errors:
                with pytest.raises(InvalidConfig, match="prefix cannot contain"):
                    storage_from_config(body)
            elif "must not both be set" in errors:
                with pytest.raises(InvalidConfig, match="must not both be set"):
                    storage_from_config(body)
            elif (
                not errors and not case["name"].endswith("invalid") and "merged" not in case["name"]
            ):
                assert isinstance(storage_from_config(body), StorageManager), case["name"]
        elif "storage_path must" in errors:
            with pytest.raises(InvalidConfig, match="subdirectory of host_path"):
                storage_from_config(body)
        elif not errors:
            storage = storage_from_config(body)
            assert isinstance(storage, SharedFSStorage), case["name"]
        judged += 1
    assert judged >= 8
