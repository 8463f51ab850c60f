"""The master's settings and its resource pools."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.config import (
    InvalidConfig,
    MasterConfig,
    ProviderConfig,
    ResourcePoolConfig,
    SharedFSConfig,
    load_master_config,
)
from assay.protocol import PING_TIMEOUT_SECONDS


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "master.yaml"
    path.write_text(text)
    return path


def _problems(tmp_path: Path, text: str) -> list[str]:
    with pytest.raises(InvalidConfig) as info:
        load_master_config(_write(tmp_path, text))
    assert info.value.message.startswith("invalid master config: ")
    return [str(d) for d in info.value.details]


def test_no_file_means_defaults() -> None:
    cfg = load_master_config(None)
    assert (cfg.host, cfg.port, cfg.db, cfg.assay_home) == ("127.0.0.1", 8080, None, None)
    assert cfg.checkpoint_storage is None
    assert cfg.resource_pools == [ResourcePoolConfig(pool_name="default")]
    assert (cfg.default_compute_pool, cfg.default_aux_pool) == ("default", "default")
    assert (cfg.agent_heartbeat_seconds, cfg.agent_lost_after_seconds) == (5.0, 30.0)
    # The master waits for an agent's pong as long as the agents wait for the master's.
    assert cfg.agent_ping_timeout_seconds == PING_TIMEOUT_SECONDS
    pool = cfg.resource_pools[0]
    assert (pool.description, pool.preemption_timeout, pool.max_slots, pool.provider) == (
        "",
        3600,
        None,
        None,
    )
    s = pool.scheduler
    assert (s.type, s.preemption, s.fitting_policy, s.default_priority) == (
        "priority",
        True,
        "best",
        42,
    )


def test_empty_file_means_defaults(tmp_path: Path) -> None:
    assert load_master_config(_write(tmp_path, "")) == MasterConfig()


def test_full_master_config_loads(tmp_path: Path) -> None:
    text = """
host: 0.0.0.0
port: 8443
db: postgresql+psycopg://assay@db/assay
assay_home: /var/lib/assay
checkpoint_storage:
  type: shared_fs
  host_path: /mnt/checkpoints
resource_pools:
  - pool_name: gpu
    description: the A100s
    scheduler: {type: fair_share, preemption: false, fitting_policy: worst}
    max_slots: 64
  - pool_name: cpu
    scheduler: {default_priority: 50}
    preemption_timeout: 60
    provider:
      type: command
      launch_command: [./launch.sh, --size, small]
      terminate_command: ./terminate.sh
      max_instances: 4
default_compute_pool: gpu
default_aux_pool: cpu
agent_heartbeat_seconds: 2
agent_lost_after_seconds: 10
"""
    cfg = load_master_config(_write(tmp_path, text))
    assert cfg.assay_home == Path("/var/lib/assay")
    assert cfg.checkpoint_storage == SharedFSConfig(host_path="/mnt/checkpoints")
    gpu, cpu = cfg.resource_pools
    assert gpu.scheduler.type == "fair_share" and gpu.scheduler.preemption is False
    assert cpu.scheduler.default_priority == 50
    assert cfg.pool("cpu") == cpu and cfg.pool("nope") is None
    provider = cpu.provider
    assert isinstance(provider, ProviderConfig)
    assert provider.launch_command == ["./launch.sh", "--size", "small"]
    assert (provider.min_instances, provider.max_instances, provider.slots_per_instance) == (
        0,
        4,
        1,
    )
    assert (provider.idle_timeout, provider.startup_timeout) == (300, 600)


def test_duplicate_pool_names_are_named(tmp_path: Path) -> None:
    text = "resource_pools:\n  - pool_name: a\n  - pool_name: default\n  - pool_name: a\n"
    assert _problems(tmp_path, text) == [
        "resource_pools[2].pool_name: duplicate pool name 'a' (also resource_pools[0]); "
        "pool names must be unique"
    ]


def test_default_pools_must_exist(tmp_path: Path) -> None:
    text = "resource_pools:\n  - pool_name: gpu\ndefault_aux_pool: gpu\n"
    assert _problems(tmp_path, text) == [
        'default_compute_pool: names no resource pool: got "default", pools are: gpu '
        "(set default_compute_pool to one of them)"
    ]


def test_provider_min_instances_must_not_exceed_max(tmp_path: Path) -> None:
    text = """
resource_pools:
  - pool_name: default
    provider: {type: command, launch_command: a, terminate_command: b,
               min_instances: 3, max_instances: 2, idle_timeout: -1}
"""
    assert _problems(tmp_path, text) == [
        "resource_pools[0].provider.idle_timeout: must be >= 0, got -1",
        "resource_pools[0].provider.max_instances: must be >= min_instances (3), got 2",
    ]


def test_provider_commands_must_be_commands(tmp_path: Path) -> None:
    text = """
resource_pools:
  - pool_name: default
    provider: {type: ssh, launch_command: [], terminate_command: 5}
"""
    assert _problems(tmp_path, text) == [
        "resource_pools[0].provider.type: must be one of 'command', got \"ssh\"",
        "resource_pools[0].provider.launch_command: must be a command string or a non-empty "
        "list of strings, got []",
        "resource_pools[0].provider.terminate_command: must be a command string or a non-empty "
        "list of strings, got 5",
    ]


def test_master_config_errors_use_the_experiment_style(tmp_path: Path) -> None:
    text = "prot: 80\nport: http\nresource_pools:\n  - scheduler: {type: fifo}\n"
    assert _problems(tmp_path, text) == [
        'port: must be an integer, got "http"',
        "resource_pools[0].pool_name: required",
        "resource_pools[0].scheduler.type: must be one of 'priority' or 'fair_share', got \"fifo\"",
        "prot: unknown key (did you mean port?)",
    ]


def test_heartbeat_must_be_shorter_than_lost_timeout(tmp_path: Path) -> None:
    text = "agent_heartbeat_seconds: 30\nagent_lost_after_seconds: 10\n"
    assert _problems(tmp_path, text) == [
        "agent_lost_after_seconds: must be > agent_heartbeat_seconds (30), got 10"
    ]


def test_a_ping_timeout_under_a_second_is_refused_and_one_given_is_kept(tmp_path: Path) -> None:
    # Under a second, a master late by a moment would drop every agent at once.
    (problem,) = _problems(tmp_path, "agent_ping_timeout_seconds: 0.5\n")
    assert problem.startswith("agent_ping_timeout_seconds:") and "1" in problem
    path = _write(tmp_path, "agent_ping_timeout_seconds: 15\n")
    assert load_master_config(path).agent_ping_timeout_seconds == 15.0


def test_missing_file_and_bad_yaml_are_invalid_config(tmp_path: Path) -> None:
    with pytest.raises(InvalidConfig, match="cannot read the master config"):
        load_master_config(tmp_path / "absent.yaml")
    with pytest.raises(InvalidConfig, match="at line 2, column 1"):
        load_master_config(_write(tmp_path, "port: [8080\n"))
    with pytest.raises(InvalidConfig, match="must be a map"):
        load_master_config(_write(tmp_path, "- 1\n"))


def test_master_overrides(tmp_path: Path) -> None:
    cfg = load_master_config(_write(tmp_path, "port: 8080\n"), overrides=["port=9090"])
    assert cfg.port == 9090


def test_task_port_base_stays_within_the_task_port_range() -> None:
    from pydantic import ValidationError

    assert MasterConfig(task_port_base=21000).task_port_base == 21000
    for wrong in (19999, 29001, 32768):
        with pytest.raises(ValidationError, match="task_port_base"):
            MasterConfig(task_port_base=wrong)
