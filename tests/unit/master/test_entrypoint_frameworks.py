"""An entrypoint whose script imports a training framework that no connected agent of its pool
can import is refused at submission, in one line naming the module, the pool and the command
that installs it; whatever the agents cannot answer for is let through."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.config import ExperimentConfig, MasterConfig, load_experiment_config
from assay.context import inspect_archive, pack_context
from assay.errors import InvalidConfig
from assay.master.experiments._frameworks import (
    OfferedFrameworks,
    ScriptImports,
    framework_problem,
    script_imports,
)

ROOT = Path(__file__).resolve().parents[3]

NO_TORCH = OfferedFrameworks("default", {"torch": False, "tensorflow": False})
WITH_TORCH = OfferedFrameworks("default", {"torch": True, "tensorflow": False})


def imports_of(tmp_path: Path, entrypoint: str | list[str], **files: str) -> ScriptImports | None:
    for name, text in files.items():
        path = tmp_path / name.replace("__", "/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    data = pack_context(tmp_path).data
    return script_imports(entrypoint, data, inspect_archive(data).members)


def config(**extra: object) -> ExperimentConfig:
    raw = {"entrypoint": "python3 train.py", "searcher": {"name": "single", "metric": "loss"}}
    return load_experiment_config({**raw, **extra})


def test_the_pytorch_example_is_refused_where_no_agent_has_torch_saying_how_to_install_it() -> None:
    example = ROOT / "examples" / "pytorch"
    data = pack_context(example).data
    needs = script_imports("python3 train.py", data, inspect_archive(data).members)
    assert needs == ScriptImports("train.py", ("torch",))
    with pytest.raises(InvalidConfig) as caught:
        framework_problem(config(), MasterConfig(), needs, [NO_TORCH, NO_TORCH])
    message = caught.value.message
    assert "\n" not in message
    assert message == (
        "invalid experiment config: entrypoint: train.py imports torch, which none of the 2 "
        "connected agents of resource pool 'default' can import; install it where the agents "
        "run (`pip install torch==2.13.0`) and restart them (a cluster of `assay up`: "
        "`assay down`, then `assay up`), or submit to a pool that has it"
    )
    assert [d.path for d in caught.value.details] == ["entrypoint"]


def test_one_agent_of_the_pool_with_the_framework_is_enough() -> None:
    needs = ScriptImports("train.py", ("torch",))
    framework_problem(config(), MasterConfig(), needs, [NO_TORCH, WITH_TORCH])


@pytest.mark.parametrize(
    ("agents", "cfg"),
    [
        ([], config()),  # no agent connected: those to come may have it
        ([OfferedFrameworks("default", {})], config()),  # an agent that does not say
        ([OfferedFrameworks("gpu", {"torch": False})], config()),  # another pool's agent
        ([NO_TORCH], config(environment={"image": "team/train:1"})),  # the image's Python
    ],
)
def test_what_the_agents_cannot_answer_for_is_let_through(
    agents: list[OfferedFrameworks], cfg: ExperimentConfig
) -> None:
    needs = ScriptImports("train.py", ("torch",))
    framework_problem(cfg, MasterConfig(), needs, agents)


def test_a_slurm_pool_runs_a_python_of_its_own() -> None:
    settings = MasterConfig.model_validate(
        {
            "resource_pools": [
                {"pool_name": "default"},
                {"pool_name": "hpc", "type": "slurm", "slurm": {"partition": "p"}},
            ]
        }
    )
    needs = ScriptImports("train.py", ("torch",))
    cfg = config(resources={"resource_pool": "hpc"})
    framework_problem(cfg, settings, needs, [OfferedFrameworks("hpc", {"torch": False})])


def test_only_the_scripts_own_top_level_imports_count(tmp_path: Path) -> None:
    script = (
        "from __future__ import annotations\n"
        "import os, tensorflow.keras as keras\n"
        "from deepspeed.ops import adam\n"
        "from . import helpers\n"
        "try:\n    import horovod\nexcept ImportError:\n    horovod = None\n"
        "if False:\n    import jax\n"
        "def main():\n    import lightning\n"
        "import torch\n"
    )
    needs = imports_of(tmp_path, "python3 -u train.py --lr 1", **{"train.py": script})
    assert needs == ScriptImports("train.py", ("tensorflow", "deepspeed", "torch"))


def test_a_module_of_the_contexts_own_by_a_frameworks_name_is_not_the_framework(
    tmp_path: Path,
) -> None:
    needs = imports_of(
        tmp_path, "python3 train.py", **{"train.py": "import torch\n", "torch.py": "x = 1\n"}
    )
    assert needs == ScriptImports("train.py", ())


def test_the_script_behind_a_launcher_is_read(tmp_path: Path) -> None:
    entrypoint = "python3 -m determined.launch.torch_distributed --trial x python3 src/train.py"
    needs = imports_of(tmp_path, entrypoint, **{"src__train.py": "import torch\n"})
    assert needs == ScriptImports("src/train.py", ("torch",))


@pytest.mark.parametrize(
    ("entrypoint", "files"),
    [
        ("python3 train.py", {"train.py": "import torch\ndef broken(:\n"}),
        ("python3 missing.py", {"train.py": "import torch\n"}),
        ("./run.sh", {"run.sh": "python3 train.py\n", "train.py": "import torch\n"}),
        ("python3 -m pkg", {"pkg__main__.py": "import torch\n"}),
    ],
)
def test_an_entrypoint_without_a_readable_script_is_not_checked(
    tmp_path: Path, entrypoint: str, files: dict[str, str]
) -> None:
    assert imports_of(tmp_path, entrypoint, **files) is None


# -- Determined's Trial APIs ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        "from determined import pytorch\n",
        "import determined.pytorch as dp\n",
        "from determined.pytorch import samplers\n",
    ],
)
def test_determined_pytorch_needs_torch_where_no_agent_has_it(tmp_path: Path, source: str) -> None:
    needs = imports_of(tmp_path, "python3 train.py", **{"train.py": source})
    assert needs == ScriptImports("train.py", ("torch",), ("determined.pytorch",))
    with pytest.raises(InvalidConfig) as caught:
        framework_problem(config(), MasterConfig(), needs, [NO_TORCH])
    assert "train.py imports torch" in caught.value.message


@pytest.mark.parametrize(
    "source",
    [
        "from determined.keras import TFKerasTrial\n",
        "import determined.keras\n",
        "from determined import keras\n",
    ],
)
def test_determined_keras_needs_tensorflow_where_no_agent_has_it(
    tmp_path: Path, source: str
) -> None:
    needs = imports_of(tmp_path, "model_def:MyTrial", **{"model_def.py": source})
    assert needs == ScriptImports("model_def.py", ("tensorflow",), ("determined.keras",))
    entry = config(entrypoint="model_def:MyTrial")
    with pytest.raises(InvalidConfig) as caught:
        framework_problem(entry, MasterConfig(), needs, [NO_TORCH])
    message = caught.value.message
    assert "model_def.py imports tensorflow, which none of the 1 connected agent" in message
    assert "pip install tensorflow" in message and "\n" not in message
    framework_problem(
        entry, MasterConfig(), needs, [OfferedFrameworks("default", {"tensorflow": True})]
    )


def test_a_trial_class_module_is_read_for_its_imports(tmp_path: Path) -> None:
    needs = imports_of(
        tmp_path,
        "model_def:MyTrial",
        **{"model_def.py": "import torch\nfrom determined import pytorch\n"},
    )
    assert needs == ScriptImports("model_def.py", ("torch",), ("determined.pytorch",))
    entry = config(entrypoint="model_def:MyTrial")
    with pytest.raises(InvalidConfig) as caught:
        framework_problem(entry, MasterConfig(), needs, [NO_TORCH])
    assert "model_def.py imports torch" in caught.value.message
    framework_problem(entry, MasterConfig(), needs, [WITH_TORCH])


def test_determined_deepspeed_needs_deepspeed_where_no_agent_has_it(tmp_path: Path) -> None:
    source = "from determined.pytorch import deepspeed as det_ds\n"
    needs = imports_of(tmp_path, "model_def:MyTrial", **{"model_def.py": source})
    apis = ("determined.pytorch", "determined.pytorch.deepspeed")
    assert needs == ScriptImports("model_def.py", ("torch", "deepspeed"), apis)
    entry = config(entrypoint="model_def:MyTrial")
    without = OfferedFrameworks("default", {"torch": True, "deepspeed": False})
    with pytest.raises(InvalidConfig) as caught:
        framework_problem(entry, MasterConfig(), needs, [without])
    message = caught.value.message
    assert "model_def.py imports deepspeed, which none of the 1 connected agent" in message
    assert "pip install deepspeed" in message and "\n" not in message
    assert [d.path for d in caught.value.details] == ["entrypoint"]
    with_it = OfferedFrameworks("default", {"torch": True, "deepspeed": True})
    framework_problem(entry, MasterConfig(), needs, [with_it])


def test_a_tfkerastrial_class_on_several_slots_is_refused_naming_the_setting(
    tmp_path: Path,
) -> None:
    source = "from determined import keras\n"
    needs = imports_of(tmp_path, "model_def:MyTrial", **{"model_def.py": source})
    two = config(entrypoint="model_def:MyTrial", resources={"slots_per_trial": 2})
    with pytest.raises(InvalidConfig) as caught:
        framework_problem(two, MasterConfig(), needs, [])
    message = caught.value.message
    assert message.startswith("invalid experiment config: resources.slots_per_trial: ")
    assert "assay trains a TFKerasTrial on one slot" in message and "not 2" in message
    assert [d.path for d in caught.value.details] == ["resources.slots_per_trial"]
    framework_problem(config(entrypoint="model_def:MyTrial"), MasterConfig(), needs, [])
    # A script with DeterminedCallback runs once per node, on any number of slots.
    script = imports_of(tmp_path, "python3 train.py", **{"train.py": source})
    framework_problem(config(resources={"slots_per_trial": 2}), MasterConfig(), script, [])


@pytest.mark.parametrize(
    ("source", "module"),
    [
        ("from determined.transformers import DetCallback\n", "determined.transformers"),
        ("from determined import transformers\n", "determined.transformers"),
        ("from determined.experimental import core_v2\n", "determined.experimental"),
        ("import determined.common.api\n", "determined.common.api"),
    ],
)
def test_a_part_of_determined_assay_does_not_have_is_refused_at_submission(
    tmp_path: Path, source: str, module: str
) -> None:
    needs = imports_of(tmp_path, "python3 train.py", **{"train.py": source})
    assert needs is not None and needs.unprovided == (module,)
    without = OfferedFrameworks("default", {"determined": False})
    with pytest.raises(InvalidConfig) as caught:
        framework_problem(config(), MasterConfig(), needs, [without])
    message = caught.value.message
    assert f"entrypoint: train.py imports {module}, which assay's determined package" in message
    assert "determined.core, .pytorch" in message and "\n" not in message
    assert "pip install determined==0.38.1" in message
    assert [d.path for d in caught.value.details] == ["entrypoint"]
    # Where an agent of the pool has Determined's own package, the trial finds it there.
    with_it = OfferedFrameworks("default", {"determined": True})
    framework_problem(config(), MasterConfig(), needs, [without, with_it])


@pytest.mark.parametrize(
    "source",
    [
        "import determined as det\nfrom determined import LOG_FORMAT, InvalidHP, core\n",
        "from determined.pytorch import DataLoader, PyTorchTrial, deepspeed, samplers\n",
        "from determined.pytorch.experimental import torch_batch_process\n",
        "from determined.keras import DeterminedCallback, callbacks\n",
        "import determined.launch.torch_distributed\nfrom determined.core import PreemptMode\n",
    ],
)
def test_what_assays_determined_package_has_is_not_refused(tmp_path: Path, source: str) -> None:
    needs = imports_of(tmp_path, "python3 train.py", **{"train.py": source})
    assert needs is not None and needs.unprovided == ()
