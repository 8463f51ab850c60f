"""Reading an NNI experiment config (v2, or v1 as nnictl reads it) into an assay experiment config.

The format is told by its keys; keys are matched as NNI matches them (case and underscores
ignored). The result is the raw experiment config (validated by the usual loader) and notes for
the experiment log: keys accepted with nothing on assay to act on, tuners run as their nearest
searcher.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from assay.config._base import show
from assay.config._errors import invalid
from assay.config._limits import MAX_TRIALS
from assay.config._load import load_experiment_config
from assay.config._yaml import decode_config, parse_yaml
from assay.config.nni._keys import (
    ALGORITHM_KEYS,
    OTHER_PLATFORM,
    OTHER_PLATFORMS,
    RECORDED,
    REFUSED_IF_TRUE,
    TOP_LEVEL,
    V1_KEYS,
    V1_TO_V2,
    V1_TRIAL,
    V1_TRIAL_KEYS,
    V2_KEYS,
    did_you_mean,
    norm,
    normalized,
    unknown_keys,
)
from assay.config.nni._paths import NniPaths, class_arg, written_key
from assay.config.nni._space import convert_space
from assay.config.nni._tuners import builtin_name, map_assessor, map_tuner, smaller_is_better
from assay.errors import ErrorDetail, InvalidConfig

_WHAT = "NNI config"
_WRITTEN = {
    "trialcommand": "trialCommand",
    "trialcodedirectory": "trialCodeDirectory",
    "searchspace": "searchSpace",
    "maxtrialnumber": "maxTrialNumber",
    "trialconcurrency": "trialConcurrency",
    "trainingservice": "trainingService",
}
_TOP = frozenset(
    norm(k)
    for k in (
        "trialCommand",
        "trialCodeDirectory",
        "searchSpaceFile",
        "searchSpace",
        "trialConcurrency",
        "trialGpuNumber",
        "maxExperimentDuration",
        "maxTrialDuration",
        "maxTrialNumber",
        "tuner",
        "assessor",
        "advisor",
        "trainingService",
        "trial",
    )
)


def nni_format(data: Any) -> str | None:
    """``v2`` or ``v1`` as the keys of ``data`` say; None when it is not an NNI config."""
    if not isinstance(data, dict):
        return None
    keys = {norm(str(k)) for k in data}
    if "entrypoint" in keys or "searcher" in keys:
        return None
    if keys & V1_KEYS or isinstance(data.get("trial"), dict):
        return "v1"
    if keys & V2_KEYS:
        return "v2"
    return None


def _as_v2(data: dict[str, Any]) -> dict[str, tuple[str, Any]]:
    """v1 keys under their v2 names (``trial.command`` -> ``trialCommand`` ...)."""
    keys = normalized(data)
    out: dict[str, tuple[str, Any]] = {}
    for key, (written, value) in keys.items():
        if key == "trial" and isinstance(value, dict):
            for tkey, (twritten, tvalue) in normalized(value).items():
                target = V1_TRIAL.get(tkey)
                if target is not None:
                    out[target] = (f"trial.{twritten}", tvalue)
                else:
                    out[f"trial.{tkey}"] = (f"trial.{twritten}", tvalue)
            continue
        out[V1_TO_V2.get(key, key)] = (written, value)
    return out


def read_nni_config(data: Any, base_dir: Path | str) -> tuple[dict[str, Any], list[str]]:
    """The assay experiment config (raw, for :func:`load_experiment_config`) of an NNI config,
    with files it names read from ``base_dir`` (the config file's directory), and the notes
    for the experiment log.

    Raises :class:`~assay.errors.InvalidConfig` naming every key assay cannot honour and what to
    use instead. The config read is validated as any assay config is, and its problems are
    given at the NNI keys the user wrote (``maxTrialNumber``, not ``searcher.max_trials``).
    """
    fmt = nni_format(data)
    if fmt is None:
        raise invalid(_WHAT, [ErrorDetail("", "not an NNI config (no trialCommand or trial)")])
    keys = _as_v2(data)
    base = Path(base_dir)
    problems: list[ErrorDetail] = []
    notes: list[str] = []
    elsewhere: list[str] = []

    def get(key: str, default: Any = None) -> Any:
        return keys[key][1] if key in keys else default

    def where(key: str) -> str:
        return keys[key][0] if key in keys else _WRITTEN.get(key, key)

    paths = NniPaths()
    for ours, key in (
        ("entrypoint", "trialcommand"),
        ("name", "experimentname"),
        ("resources", "trialgpunumber"),
        ("max_duration", "maxexperimentduration"),
        ("max_trial_duration", "maxtrialduration"),
        ("searcher.max_trials", "maxtrialnumber"),
        ("searcher.num_rounds", "maxtrialnumber"),
        ("searcher.max_concurrent_trials", "trialconcurrency"),
    ):
        paths.add(ours, where(key), leaf=True)

    for key, (written, value) in keys.items():
        if key in REFUSED_IF_TRUE:
            if value:
                problems.append(ErrorDetail(written, REFUSED_IF_TRUE[key]))
        elif key in OTHER_PLATFORM:
            elsewhere.append(written)
        elif key.startswith("trial."):
            pass  # the trial block's other keys: AdaptDL's, or other services' (_service)
        elif key not in _TOP and key not in RECORDED:
            close = did_you_mean(written, TOP_LEVEL)
            problems.append(
                ErrorDetail(
                    written,
                    f"unknown NNI config key (did you mean {close}?)"
                    if close
                    else "unknown NNI config key; see NNI's experiment config reference",
                )
            )
    trial = normalized(data).get("trial")
    if fmt == "v1" and trial is not None and isinstance(trial[1], dict):
        problems.extend(unknown_keys(trial[1], trial[0], V1_TRIAL_KEYS))

    command = get("trialcommand")
    if not isinstance(command, str) or not command.strip():
        roles = [
            k for k in ("trial.worker", "trial.ps", "trial.master", "trial.taskroles") if k in keys
        ]
        message = "required: the command that runs one trial"
        if roles:
            message = (
                f"required: {keys[roles[0]][0]} (roles of NNI's other training services) is not "
                "supported: give trial.command, the command one trial runs"
            )
        problems.append(ErrorDetail(where("trialcommand"), message))
    code_dir = get("trialcodedirectory", ".")
    if not isinstance(code_dir, str):
        problems.append(
            ErrorDetail(where("trialcodedirectory"), f"must be a path, got {show(code_dir)}")
        )
        code_dir = "."
    context = (base / code_dir).resolve()

    space = _search_space(keys, base, problems)
    space_where = where("searchspace") if "searchspace" in keys else "searchSpace"
    paths.space(space_where)
    paths.add("searcher.points", space_where, leaf=True)
    tuner = keys.get("advisor", keys.get("tuner", ("", None)))[1]
    grid = isinstance(tuner, dict) and norm(builtin_name(tuner) or "") == "gridsearch"
    hyperparameters, space_problems = convert_space(space, space_where, grid=grid)
    problems.extend(space_problems)

    concurrency = get("trialconcurrency", 1)
    # NNI's defaults: v1's maxTrialNum is 99999; v2 has no limit, so the largest assay allows.
    max_trials = get("maxtrialnumber", MAX_TRIALS if fmt == "v2" else 99999)
    if not isinstance(max_trials, int) or isinstance(max_trials, bool):
        problems.append(
            ErrorDetail(where("maxtrialnumber"), f"must be an integer, got {show(max_trials)}")
        )
        max_trials = 1
    if not isinstance(concurrency, int) or isinstance(concurrency, bool) or concurrency < 1:
        problems.append(
            ErrorDetail(
                where("trialconcurrency"), f"must be an integer >= 1, got {show(concurrency)}"
            )
        )
        concurrency = 1

    seed: list[Any] = [None]
    searcher = _searcher(
        keys,
        max_trials,
        concurrency,
        hyperparameters,
        (base, context),
        problems,
        notes,
        seed,
        paths,
    )

    out: dict[str, Any] = {
        "entrypoint": command if isinstance(command, str) else "",
        "hyperparameters": hyperparameters,
        "searcher": searcher,
        "max_restarts": 0,
    }
    if seed[0] is not None:
        out["reproducibility"] = {"experiment_seed": seed[0]}
    name = get("experimentname")
    if isinstance(name, str) and name:
        out["name"] = name
    gpus = get("trialgpunumber")
    if gpus:
        out["resources"] = {"slots_per_trial": gpus}
    for nni_key, ours in (
        ("maxexperimentduration", "max_duration"),
        ("maxtrialduration", "max_trial_duration"),
    ):
        if nni_key in keys:
            out[ours] = get(nni_key)

    service = get("trainingservice", "local")
    _service(service, where("trainingservice"), keys, out, problems, elsewhere)

    if elsewhere:
        notes.append(
            "accepted but not used (settings of NNI's training services and manager; assay "
            "runs trials on its own agents, where its scheduler places them): "
            f"{', '.join(sorted(set(elsewhere)))}"
        )
    if problems:
        raise invalid(_WHAT, problems)
    _adaptdl_paths(keys, paths)
    try:
        load_experiment_config(out)
    except InvalidConfig as exc:
        raise invalid(_WHAT, [paths.detail(d) for d in exc.details]) from None
    return out, notes


def nni_context(data: Any, base_dir: Path | str) -> Path:
    """The context directory of an NNI config: its trial code directory (``trialCodeDirectory``
    or v1's ``trial.codeDir``), relative to ``base_dir`` (the config file's directory)."""
    keys = _as_v2(data) if isinstance(data, dict) else {}
    code_dir = keys.get("trialcodedirectory", ("", "."))[1]
    return (Path(base_dir) / (code_dir if isinstance(code_dir, str) else ".")).resolve()


def nni_files(data: Any, base_dir: Path | str) -> list[tuple[str, str, Path]]:
    """The paths an NNI config names that reading it follows (its trial code directory and its
    search space file), each as ``(key as written, value, resolved under base_dir)``: what the
    master checks stays inside an uploaded directory."""
    keys = _as_v2(data) if isinstance(data, dict) else {}
    out = []
    for key in ("trialcodedirectory", "searchspacefile"):
        if key in keys and isinstance(keys[key][1], str):
            written, value = keys[key]
            out.append((written, value, (Path(base_dir) / value).resolve()))
    return out


def _search_space(keys: dict[str, tuple[str, Any]], base: Path, problems: list[ErrorDetail]) -> Any:
    if "searchspace" in keys:
        return keys["searchspace"][1]
    if "searchspacefile" not in keys:
        return {}
    written, value = keys["searchspacefile"]
    if not isinstance(value, str):
        problems.append(ErrorDetail(written, f"must be a file path, got {show(value)}"))
        return {}
    path = base / value
    try:
        data = path.read_bytes()
        text = data.decode("utf-8")
    except OSError as exc:
        problems.append(
            ErrorDetail(written, f"cannot read the search space file {value}: {exc.strerror}")
        )
        return {}
    except UnicodeDecodeError:
        # Said as the config's own bytes are (its size is bounded with the whole submission).
        try:
            decode_config(data, f"the search space file {value}")
        except InvalidConfig as exc:
            problems.append(ErrorDetail(written, exc.message))
        return {}
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        if value.lower().endswith(".json"):
            # A .json file is JSON (NNI reads it so): where it breaks is what to fix.
            problems.append(
                ErrorDetail(
                    written,
                    f"{value} is not valid JSON at line {exc.lineno}, column {exc.colno}: "
                    f"{exc.msg}",
                )
            )
            return {}
    try:
        return parse_yaml(text, value)
    except InvalidConfig as exc:
        problems.append(ErrorDetail(written, exc.message))
    except Exception as exc:
        problems.append(ErrorDetail(written, f"{value} is neither JSON nor YAML: {exc}"))
    return {}


def _searcher(
    keys: dict[str, tuple[str, Any]],
    max_trials: int,
    concurrency: int,
    hyperparameters: dict[str, Any],
    dirs: tuple[Path, Path],
    problems: list[ErrorDetail],
    notes: list[str],
    seed: list[Any],
    paths: NniPaths,
) -> dict[str, Any]:
    tuner_key = "advisor" if "advisor" in keys else "tuner"
    if tuner_key not in keys:
        problems.append(
            ErrorDetail("tuner", "required: a tuner (such as {name: TPE}) or an advisor")
        )
        return {}
    written, section = keys[tuner_key]
    if not isinstance(section, dict):
        problems.append(ErrorDetail(written, f"must be a map, got {show(section)}"))
        return {}
    paths.add("searcher", written)
    problems.extend(unknown_keys(section, written, ALGORITHM_KEYS))
    custom = {norm(k) for k in section} & {"classname", "codedirectory", "codedir", "classfilename"}
    if custom:
        searcher = _custom_tuner(section, written, dirs, problems)
        if searcher:
            # The tuner shim keeps trialConcurrency trials running and stops after
            # maxTrialNumber (or when generate_parameters raises NoMoreTrialError).
            searcher["max_concurrent_trials"] = concurrency
            if "maxtrialnumber" in keys:
                searcher["max_trials"] = max_trials
            paths.add(
                "searcher.class", f"{written}.{written_key(section, 'classname', 'className')}"
            )
            paths.add(
                "searcher.class_args",
                f"{written}.{written_key(section, 'classargs', 'classArgs')}",
            )
    else:
        mapped = map_tuner(
            section, written, max_trials=max_trials, concurrency=concurrency, space=hyperparameters
        )
        problems.extend(mapped.problems)
        notes.extend(mapped.notes)
        searcher = mapped.searcher
        for ours, theirs in mapped.paths.items():
            paths.add(f"searcher.{ours}", theirs, leaf=True)
        if mapped.seed is not None:
            seed[0] = mapped.seed
            paths.add("reproducibility", class_arg(section, written, "seed", "seed"), leaf=True)
    if "assessor" in keys and tuner_key == "tuner":
        a_written, a_section = keys["assessor"]
        if isinstance(a_section, dict):
            problems.extend(unknown_keys(a_section, a_written, ALGORITHM_KEYS))
        if not isinstance(a_section, dict):
            problems.append(ErrorDetail(a_written, f"must be a map, got {show(a_section)}"))
        elif {norm(k) for k in a_section} & {"classname", "codedirectory", "codedir"}:
            problems.append(
                ErrorDetail(
                    a_written,
                    "custom assessors are not supported: use Medianstop or Curvefitting",
                )
            )
        else:
            rule, a_problems = map_assessor(a_section, a_written)
            problems.extend(a_problems)
            paths.add("searcher.early_stopping", a_written)
            for ours, key, spelling in _ASSESSOR_ARGS:
                arg = class_arg(a_section, a_written, key, spelling)
                paths.add(f"searcher.early_stopping.{ours}", arg, leaf=True)
            if rule is not None and searcher.get("name") not in ("custom", "pbt", "grid"):
                searcher["early_stopping"] = rule
            elif rule is not None and searcher:
                problems.append(
                    ErrorDetail(
                        a_written,
                        f"an assessor cannot be used with the {searcher.get('name')} searcher: "
                        "leave it out",
                    )
                )
    return searcher


_ASSESSOR_ARGS = (
    ("start_step", "startstep", "start_step"),
    ("epoch_num", "epochnum", "epoch_num"),
    ("threshold", "threshold", "threshold"),
    ("gap", "gap", "gap"),
)
"""The early-stopping keys of assessors' classArgs."""


def _custom_tuner(
    section: dict[str, Any], where: str, dirs: tuple[Path, Path], problems: list[ErrorDetail]
) -> dict[str, Any]:
    # codeDirectory is relative to the config file, as trialCodeDirectory is.
    base, context = dirs
    fields = normalized(section)
    class_name = fields.get("classname", ("", None))[1]
    if builtin_name(section) is not None:
        problems.append(
            ErrorDetail(where, "give either a builtin tuner name or className, not both")
        )
        return {}
    if not isinstance(class_name, str) or not class_name:
        problems.append(
            ErrorDetail(f"{where}.className", "required for a custom tuner: module.ClassName")
        )
        return {}
    args = fields.get("classargs", ("", None))[1] or {}
    if not isinstance(args, dict) or not all(isinstance(k, str) for k in args):
        problems.append(
            ErrorDetail(
                f"{where}.{fields.get('classargs', ('classArgs',))[0]}",
                f"must be a map of the tuner's constructor arguments, got {show(args)}",
            )
        )
        return {}
    smaller = smaller_is_better({norm(str(k)): v for k, v in args.items()}, where, problems)
    file_name = fields.get("classfilename", ("", None))[1]
    if isinstance(file_name, str) and file_name:
        module, cls = file_name.removesuffix(".py").replace("/", "."), class_name
    else:
        module, _, cls = class_name.rpartition(".")
    code = fields.get("codedirectory", fields.get("codedir", ("", ".")))[1]
    if isinstance(code, str) and (base / code).resolve() != context:
        problems.append(
            ErrorDetail(
                f"{where}.codeDirectory",
                "a custom tuner must be in the trial code directory (the experiment's context)",
            )
        )
        return {}
    if not module:
        problems.append(
            ErrorDetail(f"{where}.className", f"must be module.ClassName, got {show(class_name)}")
        )
        return {}
    return {
        "name": "custom",
        "metric": "default",
        "smaller_is_better": smaller,
        "class": f"{module}:{cls}",
        # As NNI does: every classArgs entry (optimize_mode too) is a constructor argument.
        "class_args": dict(args),
    }


def _service(
    service: Any,
    where: str,
    keys: dict[str, tuple[str, Any]],
    out: dict[str, Any],
    problems: list[ErrorDetail],
    elsewhere: list[str],
) -> None:
    adl_used = service == "adl" or (isinstance(service, dict) and service.get("platform") == "adl")
    consumed = _ADAPTDL_KEYS if adl_used else {}
    elsewhere.extend(
        written
        for key, (written, _) in keys.items()
        if key.startswith("trial.") and key not in consumed
    )
    services = service if isinstance(service, list) else [service]
    for i, entry in enumerate(services):
        path = f"{where}[{i}]" if isinstance(service, list) else where
        platform = entry.get("platform") if isinstance(entry, dict) else entry
        if isinstance(entry, dict):
            # Even the local service's settings (GPU indices, trials per GPU, reuse) are NNI's:
            # assay's scheduler places trials.
            elsewhere.extend(f"{path}.{k}" for k in entry if norm(str(k)) != "platform")
        if platform == "local":
            continue
        if platform == "adl":
            out["adaptdl"] = _adaptdl(keys)
            continue
        if platform in OTHER_PLATFORMS:
            elsewhere.append(f"{path}.platform ({platform})")
            continue
        problems.append(
            ErrorDetail(
                f"{path}.platform" if isinstance(entry, dict) else path,
                f"unknown training service {show(platform)}; expected local or adl (others are "
                "accepted and run on assay's agents)",
            )
        )


_ADAPTDL_KEYS = {
    "trial.image": "image",
    "trial.imagepullsecrets": "image_pull_secrets",
    "trial.adaptive": "adaptive",
    "trial.checkpoint": "checkpoint",
    "trial.nfs": "nfs",
}
"""The AdaptDL platform's trial block, as the ``adaptdl`` section's keys."""


def _adaptdl(keys: dict[str, tuple[str, Any]]) -> dict[str, Any]:
    adl: dict[str, Any] = {}
    for key, ours in _ADAPTDL_KEYS.items():
        if key not in keys:
            continue
        value = keys[key][1]
        if isinstance(value, dict):
            value = {_snake(k): v for k, v in value.items()}
        adl[ours] = value
    return adl


def _adaptdl_paths(keys: dict[str, tuple[str, Any]], paths: NniPaths) -> None:
    for key, ours in _ADAPTDL_KEYS.items():
        if key not in keys:
            continue
        written, value = keys[key]
        paths.add(f"adaptdl.{ours}", written)
        if isinstance(value, dict):
            for inner in value:
                snake = _snake(str(inner))
                theirs = f"{written}.{written_key(value, norm(snake), str(inner))}"
                paths.add(f"adaptdl.{ours}.{snake}", theirs)


def _snake(key: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in key).lstrip("_")
