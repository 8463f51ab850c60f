"""Secret environment variables: the ``{name, value, secret}`` entry form, and hiding secret
values in configs, config texts and free text."""

from __future__ import annotations

import string
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from assay.config import (
    MASK,
    EnvironmentVariable,
    InvalidConfig,
    load_experiment_config,
    mask_text,
    masked_config,
    masked_config_text,
    parse_yaml,
    secret_pattern,
    secret_values,
)


def with_variables(minimal: dict[str, Any], variables: Any) -> dict[str, Any]:
    return {**minimal, "environment": {"environment_variables": variables}}


def problems(raw: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(InvalidConfig) as info:
        load_experiment_config(raw)
    return [(d.path, d.message) for d in info.value.details]


def strings(value: Any) -> Iterator[str]:
    """Every string in JSON-like data, keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from strings(k)
            yield from strings(v)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


# --- the entry form ------------------------------------------------------------------------


def test_secret_entries_give_trials_their_real_values_in_both_forms(
    minimal: dict[str, Any],
) -> None:
    cfg = load_experiment_config(
        with_variables(
            minimal, ["A=1", {"name": "TOKEN", "value": "hunter2-token", "secret": True}]
        )
    )
    as_list = cfg.environment
    assert (
        as_list.variables("cpu")
        == as_list.variables("cuda")
        == {
            "A": "1",
            "TOKEN": "hunter2-token",
        }
    )
    assert secret_values(cfg.to_json()) == ["hunter2-token"]
    cfg = load_experiment_config(
        with_variables(
            minimal,
            {
                "cpu": [{"name": "TOKEN", "value": "cpu-secret", "secret": True}],
                "gpu": ["G=1", {"name": "PLAIN", "value": "shown"}],
            },
        )
    )
    per_device = cfg.environment
    assert per_device.variables("cpu") == {"TOKEN": "cpu-secret"}
    assert per_device.variables("cuda") == {"G": "1", "PLAIN": "shown"}
    assert secret_values(cfg.to_json()) == ["cpu-secret"]


def test_an_entry_map_is_not_secret_unless_it_says_so(minimal: dict[str, Any]) -> None:
    cfg = load_experiment_config(with_variables(minimal, [{"name": "A", "value": "1"}]))
    assert cfg.environment.environment_variables.cpu == [EnvironmentVariable(name="A", value="1")]
    assert secret_values(cfg.to_json()) == []


def test_determined_string_entries_load_unchanged(minimal: dict[str, Any]) -> None:
    cfg = load_experiment_config(with_variables(minimal, ["A=1", "B=x=y", "PASSTHROUGH"]))
    assert cfg.to_json()["environment"]["environment_variables"]["cpu"] == [
        "A=1",
        "B=x=y",
        "PASSTHROUGH",
    ]
    assert secret_values(cfg.to_json()) == []


def test_secret_entries_round_trip_through_the_stored_json(minimal: dict[str, Any]) -> None:
    cfg = load_experiment_config(
        with_variables(minimal, [{"name": "T", "value": "v", "secret": True}, "A=1"])
    )
    stored = cfg.to_json()
    assert stored["environment"]["environment_variables"]["rocm"] == [
        {"name": "T", "value": "v", "secret": True},
        "A=1",
    ]
    assert load_experiment_config(stored) == cfg


def test_bad_entries_are_each_named_by_their_field(minimal: dict[str, Any]) -> None:
    raw = with_variables(
        minimal,
        [
            "A=1",
            {"value": "v", "secret": True},
            {"name": "B=2", "value": 3, "secret": "yes", "secrt": True},
            7,
        ],
    )
    assert problems(raw) == [
        ("environment.environment_variables[1].name", "required"),
        ("environment.environment_variables[2].value", "must be a string, got 3"),
        ("environment.environment_variables[2].secret", 'must be true or false, got "yes"'),
        (
            "environment.environment_variables[2].secrt",
            "unknown key (did you mean secret?)",
        ),
        (
            "environment.environment_variables[2].name",
            "must be a variable name without '=', got \"B=2\"",
        ),
        (
            "environment.environment_variables[3]",
            "must be a KEY=VALUE string or a map {name, value, secret}, got 7",
        ),
    ]


def test_bad_entries_of_a_device_type_are_named_under_it(minimal: dict[str, Any]) -> None:
    raw = with_variables(minimal, {"cpu": ["A=1", {"name": "", "value": "v"}, None]})
    assert problems(raw) == [
        (
            "environment.environment_variables.cpu[1].name",
            "must be a variable name without '=', got \"\"",
        ),
        (
            "environment.environment_variables.cpu[2]",
            "must be a KEY=VALUE string or a map {name, value, secret}, got null",
        ),
    ]


def test_secret_values_reads_stored_and_written_configs() -> None:
    entry = {"name": "T", "value": "s3cret", "secret": True}
    assert secret_values({"environment": {"environment_variables": [entry, "A=1"]}}) == ["s3cret"]
    stored = {"environment": {"environment_variables": {"cpu": [entry], "cuda": [entry]}}}
    assert secret_values(stored) == ["s3cret"]
    assert secret_values({"environment": {"environment_variables": "x"}}) == []
    assert secret_values("not a config") == []


# --- masking free text ---------------------------------------------------------------------


def test_a_secret_in_the_middle_of_a_line_is_masked() -> None:
    pattern = secret_pattern(["hunter2-token"])
    assert mask_text("token=hunter2-token; go", pattern) == f"token={MASK}; go"


def test_several_secrets_are_all_masked_every_time() -> None:
    pattern = secret_pattern(["alpha-key", "beta-key"])
    line = "alpha-key beta-key alpha-key,beta-keyX"
    assert mask_text(line, pattern) == f"{MASK} {MASK} {MASK},{MASK}X"


def test_regex_metacharacters_in_a_secret_are_literal() -> None:
    pattern = secret_pattern(["a.b*c(d)[e]|f$^\\"])
    assert mask_text("x a.b*c(d)[e]|f$^\\ y", pattern) == f"x {MASK} y"
    assert mask_text("aXbbbc(d)[e]|f$^\\ abbbc", pattern) == "aXbbbc(d)[e]|f$^\\ abbbc"


def test_a_secret_containing_another_is_masked_whole() -> None:
    pattern = secret_pattern(["abcd", "abcdefgh"])
    assert mask_text("abcdefgh abcd", pattern) == f"{MASK} {MASK}"


def test_each_line_of_a_multi_line_secret_is_masked_on_its_own() -> None:
    pem = "-----BEGIN KEY-----\nMIIBOgIBAAJBAK\n-----END KEY-----\n"
    pattern = secret_pattern([pem])
    assert mask_text("  MIIBOgIBAAJBAK", pattern) == f"  {MASK}"
    assert mask_text(pem, pattern) == MASK


def test_values_shorter_than_four_characters_are_not_masked_in_free_text() -> None:
    assert secret_pattern(["abc", ""]) is None
    assert mask_text("abc", secret_pattern(["abc"])) == "abc"
    assert mask_text("abc abcd", secret_pattern(["abc", "abcd"])) == f"abc {MASK}"


# --- masking a stored config ---------------------------------------------------------------


def stored_config(minimal: dict[str, Any], variables: Any, **more: Any) -> dict[str, Any]:
    return load_experiment_config({**with_variables(minimal, variables), **more}).to_json()


def test_masked_config_hides_secret_values_wherever_they_are(minimal: dict[str, Any]) -> None:
    config = stored_config(
        minimal,
        [
            {"name": "SHORT", "value": "ab", "secret": True},
            {"name": "TOKEN", "value": "hunter2-token", "secret": True},
            "COPY=hunter2-token",
            "PLAIN=ab",
        ],
        data={"url": "https://user:hunter2-token@example.com"},
    )
    shown = masked_config(config)
    assert shown["environment"]["environment_variables"]["cuda"] == [
        {"name": "SHORT", "value": MASK, "secret": True},
        {"name": "TOKEN", "value": MASK, "secret": True},
        f"COPY={MASK}",
        "PLAIN=ab",
    ]
    assert shown["data"] == {"url": f"https://user:{MASK}@example.com"}
    assert not any("hunter2-token" in s for s in strings(shown))
    # The stored config, which trials are given, keeps the real values.
    assert config["environment"]["environment_variables"]["cpu"][1]["value"] == "hunter2-token"


def test_a_config_without_secrets_is_shown_as_stored(minimal: dict[str, Any]) -> None:
    config = stored_config(minimal, ["A=1", {"name": "B", "value": "plain"}])
    assert masked_config(config) is config


# --- masking the config text as written ----------------------------------------------------

WRITTEN = """\
# The token is hunter2-token, keep it safe.
entrypoint: python3 train.py
searcher: {name: single, metric: loss}
environment:
  environment_variables:
    - A=1
    - name: TOKEN
      value: "hunter2-token"   # quoted
      secret: true
    - {name: SHORT, value: ab, secret: yes}
    - COPY=hunter2-token
data:
  tok: hunter2-token
"""


def shown_text(text: str, overrides: tuple[str, ...] = ()) -> str:
    config = load_experiment_config(parse_yaml(text, "t"), overrides=overrides).to_json()
    return masked_config_text(text, config)


def test_config_text_keeps_its_layout_and_comments_with_secrets_masked() -> None:
    assert (
        shown_text(WRITTEN)
        == f"""\
# The token is {MASK}, keep it safe.
entrypoint: python3 train.py
searcher: {{name: single, metric: loss}}
environment:
  environment_variables:
    - A=1
    - name: TOKEN
      value: "{MASK}"   # quoted
      secret: true
    - {{name: SHORT, value: "{MASK}", secret: yes}}
    - "COPY={MASK}"
data:
  tok: "{MASK}"
"""
    )


def test_config_text_masks_escaped_folded_and_anchored_secrets() -> None:
    text = """\
entrypoint: python3 train.py
searcher: {name: single, metric: loss}
environment:
  environment_variables:
    cpu:
      - name: KEY
        secret: true
        value: |
          -----BEGIN KEY-----
          MIIBOgIBAAJBAK
          -----END KEY-----
      - name: X
        value: &x "xy\\u007Azy-secret"
        secret: true
data:
  again: *x
  escaped: "xyz\\x7Ay-secret"
  key_line: MIIBOgIBAAJBAK
"""
    shown = shown_text(text)
    assert "MIIBOgIBAAJBAK" not in shown and "xyzzy-secret" not in shown
    assert "&x" in shown and "*x" in shown
    data = parse_yaml(shown, "shown")
    assert data["environment"]["environment_variables"]["cpu"][0]["value"] == MASK
    assert data["data"] == {"again": MASK, "escaped": MASK, "key_line": MASK}


def test_config_text_without_secrets_is_shown_as_written() -> None:
    text = "entrypoint: python3 train.py  # hi\nsearcher: {name: single, metric: loss}\n"
    assert shown_text(text) == text


def test_a_secret_given_by_an_override_is_masked_in_the_text_too() -> None:
    text = "entrypoint: python3 train.py\nsearcher: {name: single, metric: loss}\n"
    text += "data: {tok: from-override}\n"
    override = "environment.environment_variables=[{name: T, value: from-override, secret: true}]"
    shown = shown_text(text, (override,))
    assert "from-override" not in shown
    assert parse_yaml(shown, "shown")["data"] == {"tok": MASK}


def test_config_text_that_cannot_hide_a_secret_in_place_is_rendered_again() -> None:
    # An anchor's name is not a scalar: masking it in place would not parse.
    text = """\
entrypoint: python3 train.py   # a comment
searcher: {name: single, metric: loss}
environment:
  environment_variables:
    - {name: T, value: &hunter2-token "hunter2-token", secret: true}
data: {a: *hunter2-token}
"""
    shown = shown_text(text)
    assert "hunter2-token" not in shown and "# a comment" not in shown
    assert parse_yaml(shown, "shown")["data"] == {"a": MASK}


_SECRET_CHARS = string.ascii_letters + string.digits + "._-+/=$*?()[]{}|\\^'\"#:,&!%@ é€"


@settings(max_examples=80, deadline=None)
@given(
    secret=st.text(_SECRET_CHARS, min_size=4, max_size=24),
    style=st.sampled_from([None, '"', "'", "|", ">"]),
)
def test_no_secret_survives_in_the_config_text_whatever_its_yaml_style(
    secret: str, style: str | None
) -> None:
    assume(secret not in MASK)  # "****" is in every masked text
    raw = {
        "entrypoint": "python3 train.py",
        "searcher": {"name": "single", "metric": "loss"},
        "environment": {"environment_variables": [{"name": "T", "value": secret, "secret": True}]},
        "data": {"copy": secret, "inside": f"<{secret}>"},
    }
    text = yaml.safe_dump(raw, default_style=style, sort_keys=False)
    shown = masked_config_text(text, load_experiment_config(raw).to_json())
    assert secret not in shown
    assert not any(secret in s for s in strings(yaml.safe_load(shown)))


def test_storage_credentials_are_masked_in_the_config_and_its_text() -> None:
    text = (
        "checkpoint_storage:\n"
        "  type: s3\n"
        "  bucket: ckpts\n"
        "  access_key: AKIAEXAMPLEKEY\n"
        "  secret_key: supersecretvalue-abc\n"
        "  endpoint_url: http://127.0.0.1:9000\n"
    )
    stored = yaml.safe_load(text)
    shown = masked_config(stored)
    assert shown["checkpoint_storage"]["secret_key"] == MASK
    assert shown["checkpoint_storage"]["access_key"] == MASK
    assert shown["checkpoint_storage"]["bucket"] == "ckpts"
    assert stored["checkpoint_storage"]["secret_key"] == "supersecretvalue-abc"  # kept for trials
    written = masked_config_text(text, stored)
    assert "supersecretvalue" not in written and "AKIAEXAMPLEKEY" not in written
    assert "bucket: ckpts" in written
    assert set(secret_values(stored)) == {"AKIAEXAMPLEKEY", "supersecretvalue-abc"}
