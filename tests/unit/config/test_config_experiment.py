"""The experiment config: defaults, sections, JSON round trip."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.config import (
    AzureConfig,
    ConstHP,
    DeviceConfig,
    DirectoryConfig,
    ExperimentConfig,
    GCSConfig,
    IntHP,
    InvalidConfig,
    Length,
    S3Config,
    SharedFSConfig,
    SingleConfig,
    Unit,
    default_checkpoint_storage,
    load_experiment_config,
    parse_memory_size,
)
from assay.errors import InvalidRequest


def test_minimal_config_gets_determined_defaults(minimal: dict[str, Any]) -> None:
    cfg = load_experiment_config(minimal)
    assert cfg.name is None and cfg.description is None
    assert cfg.labels == [] and cfg.project == "" and cfg.workspace == "" and cfg.debug is False
    assert cfg.entrypoint == "python3 train.py"
    assert cfg.hyperparameters == {}
    assert isinstance(cfg.searcher, SingleConfig)
    assert cfg.searcher.smaller_is_better is True and cfg.searcher.max_length is None
    assert cfg.searcher.source_trial_id is None and cfg.searcher.source_checkpoint_uuid is None
    r = cfg.resources
    assert (r.slots_per_trial, r.max_slots, r.weight, r.priority) == (1, None, 1.0, None)
    assert (r.resource_pool, r.shm_size, r.agent_label, r.is_single_node) == ("", None, None, None)
    assert r.devices == [] and r.native_parallel is False
    assert cfg.checkpoint_storage is None
    assert cfg.max_restarts == 5
    assert cfg.min_validation_period == Length(unit=Unit.BATCHES, value=0)
    assert cfg.min_checkpoint_period == Length(unit=Unit.BATCHES, value=0)
    assert cfg.records_per_epoch == 0 and cfg.scheduling_unit == 100
    assert cfg.perform_initial_validation is False and cfg.checkpoint_policy == "best"
    assert cfg.preemption_timeout is None
    assert cfg.environment.variables() == {} and cfg.environment.image_for("cuda") is None
    assert cfg.bind_mounts == [] and cfg.data == {}
    assert cfg.reproducibility.experiment_seed is None


def test_null_values_count_as_absent(minimal: dict[str, Any]) -> None:
    cfg = load_experiment_config({**minimal, "max_restarts": None, "resources": None})
    assert cfg.max_restarts == 5 and cfg.resources.slots_per_trial == 1


def test_entrypoint_accepts_a_command_list(minimal: dict[str, Any]) -> None:
    as_list = load_experiment_config({**minimal, "entrypoint": ["python3", "-m", "train"]})
    assert as_list.entrypoint == ["python3", "-m", "train"]


@pytest.mark.parametrize("bad", ["", "   ", [], ["python3", 3], 7])
def test_entrypoint_refuses_empty_and_non_string_commands(
    minimal: dict[str, Any], bad: Any
) -> None:
    with pytest.raises(InvalidConfig) as info:
        load_experiment_config({**minimal, "entrypoint": bad})
    assert [d.path for d in info.value.details] == ["entrypoint"]


def test_loose_compatibility_sections_pass_through_unchanged(minimal: dict[str, Any]) -> None:
    loose = {
        "optimizations": {"aggregation_frequency": 2, "mixed_precision": "O1"},
        "integrations": {"pachyderm": {"pachd": {"host": "h", "port": 80}}},
        "data_layer": {"type": "shared_fs", "container_storage_path": None},
        "slurm": {"sbatch_args": ["--x"]},
        "pbs": {"slots_per_node": 4},
        "tensorboard_storage": {"type": "shared_fs", "host_path": "/tmp"},
        "log_policies": [{"name": "oom", "pattern": ".*OOM.*", "action": "cancel_retries"}],
        "security": {"kerberos": {"config_file": "k.conf"}},
        "profiling": {"enabled": True, "begin_on_batch": 1, "end_after_batch": 5},
    }
    cfg = load_experiment_config({**minimal, **loose})
    out = cfg.to_json()
    assert out["optimizations"] == loose["optimizations"]
    assert out["integrations"] == loose["integrations"]
    assert out["data_layer"] == {"type": "shared_fs"}
    assert out["log_policies"] == loose["log_policies"]
    assert cfg.profiling.end_after_batch == 5 and cfg.profiling.sync_timings is True


def test_environment_shorthands_become_per_device_maps(minimal: dict[str, Any]) -> None:
    cfg = load_experiment_config(
        {**minimal, "environment": {"image": "img:1", "environment_variables": ["A=1", "B=x=y"]}}
    )
    env = cfg.environment
    assert env.image_for("cpu") == env.image_for("cuda") == env.image_for("rocm") == "img:1"
    assert env.variables("cpu") == env.variables("gpu") == {"A": "1", "B": "x=y"}


def test_environment_gpu_key_is_the_old_name_of_cuda(minimal: dict[str, Any]) -> None:
    environment = {
        "image": {"gpu": "cuda-img", "cpu": "cpu-img"},
        "environment_variables": {"gpu": ["G=1"], "cpu": ["C=1", "C=2", "PASSTHROUGH"]},
    }
    env = load_experiment_config({**minimal, "environment": environment}).environment
    assert env.image_for("cuda") == "cuda-img" and env.image_for("rocm") is None
    assert env.variables("cuda") == {"G": "1"}
    # Later entries win; an entry without "=" passes the host's value through, so is skipped.
    assert env.variables("cpu") == {"C": "2"}


def test_environment_variables_of_an_unknown_device_type_are_refused(
    minimal: dict[str, Any],
) -> None:
    env = load_experiment_config(minimal).environment
    with pytest.raises(InvalidRequest, match="unknown device type 'tpu'"):
        env.variables("tpu")


def test_environment_gpu_and_cuda_disagreeing_is_an_error(minimal: dict[str, Any]) -> None:
    environment = {"image": {"gpu": "a", "cuda": "b"}}
    with pytest.raises(InvalidConfig) as info:
        load_experiment_config({**minimal, "environment": environment})
    assert [d.path for d in info.value.details] == ["environment.image.gpu"]


@pytest.mark.parametrize(
    ("text", "size"),
    [
        (1, 1),
        ("1219021 b", 1219021),
        ("1.5 gb", int(1.5 * 1024**3)),
        ("512m", 512 * 1024**2),
        ("2KiB", 2048),
        ("3 T", 3 * 1024**4),
    ],
)
def test_shm_size_reads_bytes_and_human_sizes(text: Any, size: int) -> None:
    assert parse_memory_size(text) == size


@pytest.mark.parametrize("text", ["giga", "1.gb", "1 gi", "1 i", "-1", True, 1.5])
def test_shm_size_refuses_what_is_not_a_memory_size(minimal: dict[str, Any], text: Any) -> None:
    with pytest.raises(InvalidConfig) as info:
        load_experiment_config({**minimal, "resources": {"shm_size": text}})
    assert [d.path for d in info.value.details] == ["resources.shm_size"]
    assert "memory size" in info.value.details[0].message


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 10**6), st.sampled_from(["", "b", "k", "kb", "KiB", "m", "MB", "g", "GiB"]))
def test_shm_size_scales_by_powers_of_1024(number: int, unit: str) -> None:
    power = {"": 0, "b": 0, "k": 1, "m": 2, "g": 3}[unit[:1].lower()]
    assert parse_memory_size(f"{number} {unit}".strip()) == number * 1024**power


def test_devices_accept_docker_short_form(minimal: dict[str, Any]) -> None:
    devices = [{"host_path": "/h1", "container_path": "/c1"}, "/h2:/c2:r"]
    cfg = load_experiment_config({**minimal, "resources": {"devices": devices}})
    assert cfg.resources.devices == [
        DeviceConfig(host_path="/h1", container_path="/c1", mode="mrw"),
        DeviceConfig(host_path="/h2", container_path="/c2", mode="r"),
    ]


@pytest.mark.parametrize(
    ("storage", "model"),
    [
        ({"type": "shared_fs", "host_path": "/mnt/ckpt", "storage_path": "exp"}, SharedFSConfig),
        ({"type": "directory", "container_path": "/ckpt"}, DirectoryConfig),
        ({"type": "s3", "bucket": "b", "endpoint_url": "http://minio:9000"}, S3Config),
        ({"type": "gcs", "bucket": "b", "prefix": "a/b"}, GCSConfig),
        ({"type": "azure", "container": "c", "account_url": "https://x"}, AzureConfig),
    ],
)
def test_every_checkpoint_storage_type_parses_with_gc_defaults(
    minimal: dict[str, Any], storage: dict[str, Any], model: type
) -> None:
    cfg = load_experiment_config({**minimal, "checkpoint_storage": storage})
    stored = cfg.checkpoint_storage
    assert isinstance(stored, model)
    gc = (stored.save_experiment_best, stored.save_trial_best, stored.save_trial_latest)
    assert gc == (0, 1, 1)


def test_default_checkpoint_storage_is_shared_fs_under_assay_home(tmp_path: Path) -> None:
    storage = default_checkpoint_storage(tmp_path)
    assert storage.host_path == str(tmp_path / "checkpoints")
    assert storage.directory() == tmp_path / "checkpoints"
    nested = SharedFSConfig(host_path=str(tmp_path), storage_path="runs/a")
    assert nested.directory() == tmp_path / "runs" / "a"


@pytest.mark.parametrize("storage_path", ["../out", "a/../../out", "/elsewhere"])
def test_shared_fs_storage_path_must_stay_inside_host_path(
    minimal: dict[str, Any], storage_path: str
) -> None:
    raw = {"type": "shared_fs", "host_path": "/mnt/ckpt", "storage_path": storage_path}
    with pytest.raises(InvalidConfig) as info:
        load_experiment_config({**minimal, "checkpoint_storage": raw})
    assert [d.path for d in info.value.details] == ["checkpoint_storage.storage_path"]


def test_azure_needs_exactly_one_way_to_reach_the_account(minimal: dict[str, Any]) -> None:
    both = {"type": "azure", "container": "c", "connection_string": "s", "account_url": "u"}
    with pytest.raises(InvalidConfig, match="exactly one of connection_string or account_url"):
        load_experiment_config({**minimal, "checkpoint_storage": both})


def test_bind_mount_defaults_and_checks(minimal: dict[str, Any]) -> None:
    cfg = load_experiment_config(
        {**minimal, "bind_mounts": [{"host_path": "/data", "container_path": "/data"}]}
    )
    mount = cfg.bind_mounts[0]
    assert (mount.read_only, mount.propagation) == (False, "rprivate")
    with pytest.raises(InvalidConfig) as info:
        load_experiment_config(
            {**minimal, "bind_mounts": [mount.to_json(), {"host_path": "d", "container_path": "."}]}
        )
    paths = [d.path for d in info.value.details]
    assert paths == ["bind_mounts[1].host_path", "bind_mounts[1].container_path"]


# --- JSON round trip ---------------------------------------------------------------------------

_names = st.text("abcdefghij_", min_size=1, max_size=6)
_scalars = st.none() | st.booleans() | st.integers(-5, 5) | st.text("xyz", max_size=3)


def _int_hp(draw: st.DrawFn) -> dict[str, Any]:
    low = draw(st.integers(-10, 10))
    hp: dict[str, Any] = {"type": "int", "minval": low, "maxval": low + draw(st.integers(0, 9))}
    if draw(st.booleans()):
        hp["count"] = draw(st.integers(1, 4))
    return hp


@st.composite
def _hyperparameter(draw: st.DrawFn, depth: int = 0) -> Any:
    kind = draw(st.sampled_from(["const", "implicit", "int", "double", "log", "cat", "nested"]))
    if kind == "const":
        return {"type": "const", "val": draw(_scalars)}
    if kind == "implicit":
        return draw(_scalars | st.lists(_scalars, max_size=3))
    if kind == "int":
        return _int_hp(draw)
    if kind in ("double", "log"):
        low = draw(st.floats(-3, 3, allow_nan=False))
        hp = {"type": kind, "minval": low, "maxval": low + draw(st.floats(0, 2))}
        if kind == "log":
            hp["base"] = draw(st.sampled_from([2, 10, 2.718]))
        return hp
    if kind == "cat":
        return {"type": "categorical", "vals": draw(st.lists(_scalars, min_size=1, max_size=4))}
    if depth >= 2:
        return 1
    return draw(st.dictionaries(_names, _hyperparameter(depth + 1), min_size=1, max_size=3))


_searchers = st.sampled_from(
    [
        {"name": "single", "metric": "loss", "max_length": {"batches": 100}},
        {"name": "random", "metric": "acc", "max_trials": 4, "smaller_is_better": False},
        {"name": "adaptive_asha", "metric": "loss", "max_trials": 8, "max_length": 100},
        {
            "name": "async_halving",
            "metric": "l",
            "max_trials": 8,
            "num_rungs": 3,
            "time_metric": "batches",
            "max_time": 50,
            "early_stopping": {"name": "medianstop"},
        },
        {"name": "hyperband", "metric": "l", "max_length": {"epochs": 9}, "eta": 3},
        {"name": "tpe", "metric": "l", "max_trials": 3, "sampler_options": {"multivariate": True}},
        {"name": "custom", "class": "search:Mine", "metric": "l", "anything": {"k": [1]}},
        {
            "name": "pbt",
            "metric": "l",
            "population_size": 4,
            "num_rounds": 2,
            "length_per_round": {"batches": 10},
            "replace_function": {"truncate_fraction": 0.25},
            "explore_function": {"resample_probability": 0.2, "perturb_factor": 0.1},
        },
    ]
)


@st.composite
def _configs(draw: st.DrawFn) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "entrypoint": draw(st.sampled_from(["python3 train.py", ["python3", "t.py"]])),
        "searcher": draw(_searchers),
        "hyperparameters": draw(st.dictionaries(_names, _hyperparameter(), max_size=4)),
    }
    if draw(st.booleans()):
        raw["resources"] = {"slots_per_trial": draw(st.integers(0, 8)), "shm_size": "1 gb"}
    if draw(st.booleans()):
        raw["environment"] = {"image": "img", "environment_variables": ["A=1"]}
    if draw(st.booleans()):
        raw["data"] = {"url": "s3://x", "none": None, "nested": {"k": [1, None]}}
    if draw(st.booleans()):
        raw["min_validation_period"] = {"epochs": draw(st.integers(0, 5))}
    return raw


@settings(max_examples=60, deadline=None)
@given(_configs())
def test_to_json_round_trips_through_load(raw: dict[str, Any]) -> None:
    cfg = load_experiment_config(raw)
    assert load_experiment_config(cfg.to_json()) == cfg


def test_full_determined_config_round_trips(minimal: dict[str, Any]) -> None:
    raw = {
        **minimal,
        "hyperparameters": {"list_hparam": [10, {"type": "const", "val": "a"}], "x": None},
        "environment": {"ports": {"a": 1}, "registry_auth": {"username": "u"}, "pod_spec": {}},
        "data_layer": {"type": "shared_fs", "container_storage_path": None},
        "checkpoint_storage": {"type": "azure", "container": "c", "connection_string": "s"},
    }
    cfg = load_experiment_config(raw)
    assert load_experiment_config(cfg.to_json()) == cfg
    assert isinstance(cfg.hyperparameters["x"], ConstHP) and cfg.hyperparameters["x"].val is None


def test_to_json_writes_every_hyperparameter_explicitly(minimal: dict[str, Any]) -> None:
    raw = {
        **minimal,
        "hyperparameters": {"lr": 0.1, "n": {"type": "int", "minval": 1, "maxval": 2}},
    }
    cfg = load_experiment_config(raw)
    assert isinstance(cfg.hyperparameters["n"], IntHP)
    assert cfg.to_json()["hyperparameters"] == {
        "lr": {"type": "const", "val": 0.1},
        "n": {"type": "int", "minval": 1, "maxval": 2},
    }


def test_experiment_config_is_immutable(minimal: dict[str, Any]) -> None:
    cfg = load_experiment_config(minimal)
    with pytest.raises(ValueError, match="frozen"):
        cfg.max_restarts = 3  # type: ignore[misc]
    assert isinstance(cfg, ExperimentConfig)
