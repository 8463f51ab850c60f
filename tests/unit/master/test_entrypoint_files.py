"""An entrypoint that runs a Python script the context does not hold is refused at submission;
every other form of entrypoint is let through."""

from __future__ import annotations

import pytest

from assay.context import MemberInfo
from assay.master.experiments._entrypoint_files import entrypoint_script, missing_script_problem


def files(*names: str) -> list[MemberInfo]:
    return [MemberInfo(name, "file", 0, 0o644) for name in names]


@pytest.mark.parametrize(
    ("entrypoint", "script"),
    [
        ("python3 train.py", "train.py"),
        ("python train.py --lr 0.1", "train.py"),
        ("python3.11 -u ./src/train.py", "src/train.py"),
        ("/usr/bin/python3 -X dev -W ignore train.py", "train.py"),
        ("CUDA_VISIBLE_DEVICES=0 python3 train.py && echo done", "train.py"),
        (["python3", "train.py", "--x"], "train.py"),
        ("python3 -- train.py", "train.py"),
    ],
)
def test_the_script_of_a_python_entrypoint_is_found(
    entrypoint: str | list[str], script: str
) -> None:
    assert entrypoint_script(entrypoint) == script


@pytest.mark.parametrize(
    "entrypoint",
    [
        "model_def:MyTrial",
        "python3 -m determined.launch.torch_distributed python3 train.py",
        "python3 -c 'print(1)'",
        "python3",
        "python3 -",
        "python3 /opt/code/train.py",
        "python3 ../train.py",
        "python3 $SCRIPT",
        "python3 'unclosed",
        "sh -c 'python3 train.py'",
        "cd sub && python3 train.py",
        "./run.sh",
        "pythonic train.py",
        ["bash", "train.sh"],
    ],
)
def test_other_entrypoints_name_no_script_to_check(entrypoint: str | list[str]) -> None:
    assert entrypoint_script(entrypoint) is None


def test_a_script_in_the_context_or_a_package_directory_passes() -> None:
    assert missing_script_problem("python3 src/train.py", files("src/train.py")) is None
    assert missing_script_problem("python3 pkg", files("pkg/__main__.py")) is None


def test_a_context_packed_one_folder_too_high_is_refused_naming_the_folder() -> None:
    problem = missing_script_problem("python3 train.py", files("digits/train.py", "digits/m.py"))
    assert problem is not None
    assert problem.path == "entrypoint"
    assert problem.message == (
        "'python3 train.py' runs 'train.py', which is not in the context: the context's files "
        "are under 'digits/': pack the folder's contents, not the folder"
    )


def test_a_script_missing_from_the_context_is_refused_in_one_line() -> None:
    problem = missing_script_problem(["python3", "trian.py"], files("train.py", "util.py"))
    assert problem is not None
    assert "'python3 trian.py' runs 'trian.py', which is not in the context" in problem.message
    assert "\n" not in problem.message


def test_a_parent_directory_given_as_the_context_is_refused_naming_the_folder() -> None:
    problem = missing_script_problem(
        "python3 train.py", files("config.yaml", "digits/train.py", "other/x.py")
    )
    assert problem is not None
    assert problem.message.endswith(
        "but 'digits/train.py' is: give the folder 'digits' as the context, not its parent"
    )
