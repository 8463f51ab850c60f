"""``assay preview-search`` reads an NNI config as ``experiment create`` does: the searcher it
maps onto is previewed, and what NNI's config gets wrong is refused naming the key."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tests.unit.cli.test_cli_nni_refusals import nni_config, refusal
from tests.unit.cli.test_cli_refusals import assay


def test_preview_search_previews_an_nni_hyperband_config(tmp_path: Path) -> None:
    path = nni_config(tmp_path, maxTrialNumber=6, trialConcurrency=2)
    data = yaml.safe_load(path.read_text())
    del data["tuner"]
    data["advisor"] = {"name": "Hyperband", "classArgs": {"R": 9, "eta": 3}}
    path.write_text(yaml.safe_dump(data))
    done = assay(tmp_path, "preview-search", str(path), "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["searcher"] == "hyperband" and result["trials"] == 6
    assert [b["rungs"] for b in result["brackets"]] == [[1, 3, 9], [3, 9], [9]]
    assert "note: read as an NNI v2 config from config.yml" in done.stderr


def test_preview_search_previews_an_nni_tpe_config_with_its_trial_number(tmp_path: Path) -> None:
    path = nni_config(tmp_path, maxTrialNumber=3)
    done = assay(tmp_path, "preview-search", str(path))
    assert done.returncode == 0, done.stderr
    assert "searcher: tpe" in done.stdout
    assert "trials: 3" in done.stdout


def test_preview_search_refuses_an_nni_config_naming_the_key(tmp_path: Path) -> None:
    path = nni_config(tmp_path, tuner={"name": "NoSuchTuner"})
    lines = refusal(assay(tmp_path, "preview-search", str(path)))
    assert lines[0] == "error: invalid NNI config: 1 problem"
    assert lines[1].strip().startswith('tuner.name: unknown NNI tuner "NoSuchTuner"')
