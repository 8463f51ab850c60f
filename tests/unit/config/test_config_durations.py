"""Time limits (max_duration, max_trial_duration) and the adaptdl section."""

from __future__ import annotations

from typing import Any

import pytest

from assay.config import (
    InvalidConfig,
    format_duration,
    load_experiment_config,
    parse_duration,
)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30s", 30.0),
        ("10m", 600.0),
        ("1h", 3600.0),
        ("1.5h", 5400.0),
        ("2d", 172800.0),
        ("2D", 172800.0),
        ("45", 45.0),
        (90, 90.0),
        (0.5, 0.5),
    ],
)
def test_parse_duration_reads_nni_units_and_seconds(text: str | float, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("bad", ["", "1w", "h", "-1h", "1h30m", "0s", 0, -5, True, "nan"])
def test_parse_duration_refuses_with_one_line(bad: Any) -> None:
    with pytest.raises(ValueError) as info:
        parse_duration(bad)
    assert "\n" not in str(info.value) and "must be" in str(info.value)


def test_parse_duration_refuses_a_limit_the_database_cannot_hold() -> None:
    with pytest.raises(ValueError, match="at most"):
        parse_duration("1000000d")


@pytest.mark.parametrize(
    ("seconds", "text"), [(30, "30s"), (600, "10m"), (5400, "90m"), (86400, "1d"), (1.5, "1.5s")]
)
def test_format_duration_gives_the_shortest_exact_form(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text
    assert parse_duration(text) == seconds


def test_durations_are_kept_as_seconds(minimal: dict[str, Any]) -> None:
    cfg = load_experiment_config({**minimal, "max_duration": "1h", "max_trial_duration": 90})
    assert cfg.max_duration == 3600.0 and cfg.max_trial_duration == 90.0
    assert cfg.to_json()["max_duration"] == 3600.0
    assert load_experiment_config(cfg.to_json()) == cfg


def test_a_bad_duration_is_refused_at_its_key(minimal: dict[str, Any]) -> None:
    with pytest.raises(InvalidConfig) as info:
        load_experiment_config({**minimal, "max_trial_duration": "ten minutes"})
    [detail] = info.value.details
    assert detail.path == "max_trial_duration"
    assert "s, m, h or d" in detail.message


def test_adaptdl_section_of_seed_003_is_accepted(minimal: dict[str, Any]) -> None:
    adaptdl = {
        "image": "registry.example/nni:adaptdl",
        "image_pull_secrets": [{"name": "imagepullsecret"}],
        "adaptive": True,
        "checkpoint": {"storage_class": "dfs", "storage_size": "1Gi"},
    }
    cfg = load_experiment_config({**minimal, "adaptdl": adaptdl})
    assert cfg.adaptdl is not None and cfg.adaptdl.checkpoint is not None
    assert cfg.adaptdl.checkpoint.storage_size == "1Gi"
    assert cfg.to_json()["adaptdl"] == adaptdl


def test_adaptdl_nfs_is_refused_in_one_line_naming_the_export_and_where_to_mount_it(
    minimal: dict[str, Any],
) -> None:
    # AdaptDL mounts the export into each trial; assay mounts nothing, so a trial would fail
    # at its start on every agent that lacks the mount: refused at submission instead.
    nfs = {"server": "10.0.0.1", "path": "/export", "container_mount_path": "/nfs"}
    with pytest.raises(InvalidConfig) as info:
        load_experiment_config({**minimal, "adaptdl": {"adaptive": True, "nfs": nfs}})
    [detail] = info.value.details
    assert detail.path == "adaptdl.nfs"
    assert "\n" not in detail.message
    assert "NFS export 10.0.0.1:/export into each trial at /nfs" in detail.message
    assert "mount it at /nfs on every agent's host and remove nfs" in detail.message


def test_adaptdl_nfs_of_any_shape_is_refused_once(minimal: dict[str, Any]) -> None:
    with pytest.raises(InvalidConfig) as info:
        load_experiment_config({**minimal, "adaptdl": {"imag": "x", "nfs": "server:/"}})
    paths = sorted(d.path for d in info.value.details)
    assert paths == ["adaptdl.imag", "adaptdl.nfs"]


def test_adaptdl_nfs_of_an_experiment_stored_before_the_refusal_still_loads(
    minimal: dict[str, Any],
) -> None:
    nfs = {"server": "10.0.0.1", "path": "/", "container_mount_path": "/nfs"}
    cfg = load_experiment_config({**minimal, "adaptdl": {"nfs": nfs}}, stored=True)
    assert cfg.adaptdl is not None and cfg.adaptdl.nfs is not None
    assert cfg.adaptdl.nfs.container_mount_path == "/nfs"


def test_adaptdl_refuses_unknown_keys_and_relative_mounts(minimal: dict[str, Any]) -> None:
    with pytest.raises(InvalidConfig) as info:
        load_experiment_config(
            {
                **minimal,
                "adaptdl": {
                    "imag": "x",
                    "nfs": {"server": "s", "path": "/", "container_mount_path": "nfs"},
                },
            }
        )
    paths = sorted(d.path for d in info.value.details)
    assert paths == ["adaptdl.imag", "adaptdl.nfs", "adaptdl.nfs.container_mount_path"]
