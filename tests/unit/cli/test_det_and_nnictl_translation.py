"""Determined's ``det`` and NNI's ``nnictl`` command lines become assay's, command by command."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from assay.cli._words import Translation
from assay.cli.determined import DET_RULES, translate_det
from assay.cli.nni import NNICTL_RULES, translate_nnictl


def translate(tool: str, args: Sequence[str], env: Mapping[str, str]) -> Translation:
    return translate_det(args, env) if tool == "det" else translate_nnictl(args)


DET_CASES = [
    ("model create mnist --description best", "model create --description best mnist"),
    ("m list --json", "model list --json"),
    ("model describe mnist --json", "model describe --json mnist"),
    ("model list-versions mnist", "model describe mnist"),
    ("model register-version mnist 0b6f7a52", "model register-version mnist 0b6f7a52"),
    ("model delete mnist --yes", "model delete --yes mnist"),
    ("tensorboard start 3 -t 5 --no-browser", "tensorboard start -t 5 3"),
    ("tensorboard list --all", "tensorboard list --all"),
    ("tensorboard kill 2", "tensorboard kill 2"),
    (
        "notebook start --config-file nb.yaml -c . --config resources.slots=0 --no-browser",
        "notebook start --config-file nb.yaml --context . --config resources.slots=0 --no-browser",
    ),
    ("notebook open 4", "notebook open 4"),
    ("notebook list --all", "notebook list --all"),
    ("notebook logs -f 4", "notebook logs --follow 4"),
    ("notebook kill 4", "notebook kill 4"),
    ("shell start -d -- -L 8888:localhost:8888", "shell start --detach -- -L 8888:localhost:8888"),
    ("shell open 5 ls -la", "shell open -- 5 ls -la"),
    ("shell show_ssh_command 5", "shell show-ssh-command 5"),
    ("shell list", "shell list"),
    ("shell logs 5", "shell logs 5"),
    ("shell kill 5", "shell kill 5"),
    (
        "e set gc-policy 4 --save-experiment-best 0 --save-trial-best 0 --save-trial-latest 0",
        "experiment set gc-policy --save-experiment-best 0 --save-trial-best 0 "
        "--save-trial-latest 0 4",
    ),
    (
        "experiment create c.yaml ctx --local --test-mode",
        "experiment create --local --test-mode c.yaml ctx",
    ),
    (
        "e create c.yaml ctx --paused --config a.b=1",
        "experiment create --paused --config a.b=1 c.yaml ctx",
    ),
    ("e create c.yaml ctx --follow-first-trial", "experiment create --follow c.yaml ctx"),
    ("e list", "experiment list"),
    ("e ls --all --json --limit=7", "experiment list --all --json --limit 7"),
    ("e describe 4 --json", "experiment describe --json 4"),
    ("e list-trials 4", "experiment list-trials 4"),
    ("e lc 4 --best 2", "experiment list-checkpoints --best 2 4"),
    (
        "e download 4 --top-n 3 -o out -q",
        "experiment download --top-n 3 --output-dir out --quiet 4",
    ),
    ("t download 9 --best -o out", "trial download --best --output-dir out 9"),
    ("trial download 9 --latest", "trial download --latest 9"),
    ("c describe ab12 --json", "checkpoint describe --json ab12"),
    ("checkpoint download ab12 --output-dir out", "checkpoint download --output-dir out ab12"),
    ("c delete ab12,cd34 --yes", "checkpoint delete --yes ab12,cd34"),
    ("c ls 4 --best 1 --csv", "experiment list-checkpoints --best 1 --csv 4"),
    ("e config 4", "experiment config 4"),
    ("e logs 4 -f", "experiment logs --follow 4"),
    ("e wait 4", "experiment wait 4"),
    ("e kill 4", "experiment kill 4"),
    ("experiment pause 4", "experiment pause 4"),
    ("e activate 4", "experiment activate 4"),
    ("e cancel 4", "experiment cancel 4"),
    ("e archive 4", "experiment archive 4"),
    ("e unarchive 4", "experiment unarchive 4"),
    ("e set priority 4 10", "experiment set priority 4 10"),
    ("e set weight 4 2.5", "experiment set weight 4 2.5"),
    ("e set max-slots 4 8", "experiment set max-slots 4 8"),
    ("e delete 17 --yes", "experiment delete --yes 17"),
    (
        "e continue 16 --config searcher.max_length.batches=600",
        "experiment continue --config searcher.max_length.batches=600 16",
    ),
    ("e continue 16 -f", "experiment continue --follow 16"),
    ("t logs 9", "trial logs 9"),
    ("t logs 9 --tail 20 --timestamps", "trial logs --tail 20 --timestamps 9"),
    ("trial logs 9 --head=5", "trial logs --head 5 9"),
    ("agent list", "agent list"),
    ("a ls --json", "agent list --json"),
    ("slot list --csv", "slot list --csv"),
    ("resource-pool list", "resource-pool list"),
    ("rp list --json", "resource-pool list --json"),
    ("master info", "master info"),
    ("master config --json", "master config --json"),
    ("master logs -f --tail 50", "master logs --follow --tail 50"),
    ("trial logs 9 --follow", "trial logs --follow 9"),
    ("t describe 9 --json", "trial describe --json 9"),
    ("t describe 9 --metrics --csv", "trial describe --metrics --csv 9"),
    ("t kill 9", "trial kill 9"),
    ("cmd run -d python3 x.py --lr 1", "cmd run --detach -- python3 x.py --lr 1"),
    (
        "command run --config resources.slots=0 echo hi",
        "cmd run --config resources.slots=0 -- echo hi",
    ),
    ("cmd list", "task list"),
    ("task list --all", "task list --all"),
    ("task logs abc -f", "task logs --follow abc"),
    ("j list", "job list"),
    ("job list -p gpus", "job list --resource-pool gpus"),
    ("job update 7a3 --priority 10", "job update --priority 10 7a3"),
    ("j update 7a3 --ahead-of 9f1", "job update --ahead-of 9f1 7a3"),
    (
        "job update-batch 7a3.priority=1 9f1.weight=2",
        "job update-batch 7a3.priority=1 9f1.weight=2",
    ),
    ("user login bob", "user login bob"),
    ("u whoami", "user whoami"),
    ("user logout", "user logout"),
    ("user list", "user list"),
    ("user activate bob", "user activate bob"),
    ("user deactivate bob", "user deactivate bob"),
    ("user change-password bob", "user change-password bob"),
    ("-m 10.0.0.1:8080 e list", "-m http://10.0.0.1:8080 experiment list"),
    ("--master=https://m:8443 e list", "-m https://m:8443 experiment list"),
    ("--help", "--help"),
]


@pytest.mark.parametrize(("typed", "expected"), DET_CASES)
def test_det_command_becomes_the_assay_command(typed: str, expected: str) -> None:
    done = translate("det", typed.split(), {})
    assert done.error is None
    assert done.argv == expected.split()


NNICTL_CASES = [
    ("create --config c.yml", "nni create --config c.yml"),
    ("create -c c.yml --port 8081", "nni create --config c.yml --port 8081"),
    ("stop abc123", "nni stop abc123"),
    ("resume abc123", "nni resume abc123"),
    ("view abc123", "nni view abc123"),
    ("trial ls abc123", "nni trial ls abc123"),
    ("experiment list", "nni experiment list"),
    (
        "experiment export abc123 --type csv --filename out.csv",
        "nni experiment export --type csv --filename out.csv abc123",
    ),
    (
        "experiment export abc123 -t json -f o.json",
        "nni experiment export --type json --filename o.json abc123",
    ),
    ("experiment show abc123", "nni view abc123"),
]


@pytest.mark.parametrize(("typed", "expected"), NNICTL_CASES)
def test_nnictl_command_becomes_the_assay_nni_command(typed: str, expected: str) -> None:
    done = translate("nnictl", typed.split(), {})
    assert done.error is None
    assert done.argv == expected.split()


def test_every_rule_is_covered_by_a_case() -> None:
    covered = {
        id(rule)
        for tool, rules, cases in (
            ("det", DET_RULES, DET_CASES),
            ("nnictl", NNICTL_RULES, NNICTL_CASES),
        )
        for rule in rules
        for typed, _ in cases
        if rule.assay and _matches(rule, typed.split())
    }
    mapped = [r for r in (*DET_RULES, *NNICTL_RULES) if r.assay]
    missing = [
        " ".join(r.words[i][0] for i in range(len(r.words))) for r in mapped if id(r) not in covered
    ]
    assert not missing, f"rules without a case: {missing}"


def _matches(rule: object, words: list[str]) -> bool:
    rule_words = rule.words  # type: ignore[attr-defined]
    words = [w for w in words if not w.startswith("-")]
    return len(words) >= len(rule_words) and all(
        w in aliases for w, aliases in zip(words, rule_words, strict=False)
    )


def test_det_master_from_the_environment_unless_given() -> None:
    env = {"DET_MASTER": "gpu-box:8080"}
    assert translate("det", ["e", "list"], env).argv == [
        "-m",
        "http://gpu-box:8080",
        "experiment",
        "list",
    ]
    given = translate("det", ["-m", "http://other:1", "e", "list"], env)
    assert given.argv == ["-m", "http://other:1", "experiment", "list"]


@pytest.mark.parametrize(
    ("tool", "typed", "closest"),
    [
        ("det", "e frobnicate 3", "`assay experiment`"),
        ("det", "e lisst", "`assay experiment list`"),
        ("det", "agent enable x", "`assay agent`"),
        ("det", "slot disable x 0", "`assay slot`"),
        ("det", "notebook config 3", "`assay notebook`"),
        ("det", "shell describe 3", "`assay shell`"),
        ("nnictl", "top", "`assay experiment list`"),
        ("nnictl", "log stdout abc", "`assay trial logs`"),
        ("nnictl", "vieww abc", "`assay nni view`"),
        ("nnictl", "update concurrency abc --value 3", "`assay experiment set`"),
    ],
)
def test_unmapped_command_names_the_closest_assay_command(
    tool: str, typed: str, closest: str
) -> None:
    done = translate(tool, typed.split(), {})
    assert done.argv is None and done.error is not None
    assert "no assay equivalent" in done.error and closest in done.error
    assert "\n" not in done.error


def test_unmapped_flag_is_refused_naming_the_mapped_ones() -> None:
    done = translate("det", ["e", "list", "--csv"], {})
    assert done.argv is None
    assert (
        done.error == "det e list: --csv is not mapped (mapped flags: --all, --json, --limit, -a)"
    )


def test_dropped_flag_is_said_not_silently_lost() -> None:
    done = translate("nnictl", ["stop", "abc", "--port", "8080"], {})
    assert done.argv == ["nni", "stop", "abc"]
    assert done.notes and "--port ignored" in done.notes[0]


def test_wrong_number_of_arguments_is_one_line() -> None:
    done = translate("det", ["e", "describe"], {})
    assert done.error == "det e describe takes 1 argument(s), got 0"


def test_flag_missing_its_value_is_refused() -> None:
    done = translate("det", ["e", "list", "--limit"], {})
    assert done.error == "det e list: --limit needs a value"
