from __future__ import annotations

import pytest

from assay.cli._follow import checkpoint_directory


@pytest.mark.parametrize(
    ("storage", "expected"),
    [
        ({"type": "shared_fs", "host_path": "/srv/ckpt"}, "/srv/ckpt"),
        ({"type": "shared_fs", "host_path": "/srv/ckpt", "storage_path": "team"}, "/srv/ckpt/team"),
        (
            {"type": "shared_fs", "host_path": "/srv/ckpt", "storage_path": "/srv/ckpt/a"},
            "/srv/ckpt/a",
        ),
        ({"save_trial_latest": 5}, None),
        ({}, None),
    ],
)
def test_printed_checkpoint_directory_joins_storage_path_inside_host_path(
    storage: dict[str, object], expected: str | None
) -> None:
    assert checkpoint_directory(storage) == expected
