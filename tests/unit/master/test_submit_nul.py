"""A config or override holding a NUL character is refused before anything is stored: neither
database can keep one in text, and PostgreSQL failed the insert with an internal error."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from assay.config import MasterConfig
from assay.errors import InvalidConfig
from assay.master import Submission
from assay.master.experiments._submit import validate_submission


def train_context() -> bytes:
    """A context holding the ``train.py`` the configs' entrypoint runs."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.addfile(tarfile.TarInfo("train.py"), io.BytesIO(b""))
    return buf.getvalue()


def config(name: str, description: str = "") -> str:
    return json.dumps(
        {
            "name": name,
            "description": description,
            "entrypoint": "python3 train.py",
            "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 1}},
        }
    )


def refusal(sub: Submission, tmp_path: Path) -> list[str]:
    with pytest.raises(InvalidConfig) as caught:
        validate_submission(sub, MasterConfig(), tmp_path)
    return [f"{d.path}: {d.message}" for d in caught.value.details]


def test_nul_in_config_values_is_refused_naming_each_field(tmp_path: Path) -> None:
    sub = Submission(config("a\x00b", description="\x00"), train_context())
    assert refusal(sub, tmp_path) == [
        "name: must not contain NUL characters (\\0)",
        "description: must not contain NUL characters (\\0)",
    ]


def test_nul_in_an_override_is_refused_naming_it(tmp_path: Path) -> None:
    sub = Submission(config("fine"), train_context(), overrides=("name=ok", "description=\x00"))
    assert "overrides[1]: must not contain NUL characters (\\0)" in refusal(sub, tmp_path)


def test_a_config_without_nul_is_accepted(tmp_path: Path) -> None:
    valid = validate_submission(
        Submission(config("fine"), train_context()), MasterConfig(), tmp_path
    )
    assert valid.config.name == "fine"
