"""``assay master config`` shows what the master uses: the database it opened, its home and the
checkpoint storage experiments naming none get, never null for a default, secrets masked."""

from __future__ import annotations

from pathlib import Path

from assay.config import MASK, MasterConfig
from assay.master import effective_config


def test_defaults_are_shown_as_the_values_the_master_uses(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'assay.db'}"
    shown = effective_config(MasterConfig(), url, tmp_path)
    assert shown["db"] == url
    assert shown["assay_home"] == str(tmp_path)
    storage = shown["checkpoint_storage"]
    assert storage is not None and storage["type"] == "shared_fs"
    assert str(tmp_path / "checkpoints") in str(storage)


def test_a_database_password_stays_masked(tmp_path: Path) -> None:
    url = "postgresql://assay:hunter2@db.example:5432/assay"
    shown = effective_config(MasterConfig(db=url), url, tmp_path)
    assert shown["db"] == f"postgresql://assay:{MASK}@db.example:5432/assay"
    assert "hunter2" not in str(shown)


def test_configured_checkpoint_storage_is_shown_as_configured(tmp_path: Path) -> None:
    settings = MasterConfig.model_validate(
        {"checkpoint_storage": {"type": "shared_fs", "host_path": "/mnt/ckpts"}}
    )
    shown = effective_config(settings, "sqlite://", tmp_path)
    assert shown["checkpoint_storage"]["host_path"] == "/mnt/ckpts"


def test_the_metrics_scrape_token_stays_masked(tmp_path: Path) -> None:
    settings = MasterConfig.model_validate(
        {"observability": {"scrape_token": "a-scrape-token-nobody-sees"}}
    )
    shown = effective_config(settings, "sqlite://", tmp_path)
    assert shown["observability"] == {"enable_prometheus": True, "scrape_token": MASK}
    assert "nobody-sees" not in str(shown)
