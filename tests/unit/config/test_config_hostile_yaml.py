"""Hostile YAML is refused while it is read, with a line and a column, and at a glance: alias
bombs, structures that contain themselves, deep nesting, huge numbers, bytes that are not UTF-8,
malformed tags. Nothing gets past as a Python exception."""

from __future__ import annotations

import pytest

from assay.config import MAX_CONFIG_BYTES, InvalidConfig, decode_config, parse_yaml


def refusal(text: str | bytes) -> InvalidConfig:
    with pytest.raises(InvalidConfig) as info:
        parse_yaml(text, "exp.yaml")
    return info.value


def laughs(levels: int, fan: int = 9) -> str:
    """The "billion laughs": each level a list of ``fan`` aliases of the level before."""
    lines = [f"l0: &l0 [{', '.join(['lol'] * fan)}]"]
    for i in range(1, levels):
        lines.append(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * fan)}]")
    return "\n".join(lines) + "\n"


def test_yaml_alias_bomb_is_refused_before_expansion() -> None:
    # Expanded, it would hold 9**12 (282 billion) values; refusing it must not expand it.
    error = refusal(laughs(12))
    assert "with its aliases expanded, this holds more than 100,000 values" in error.message
    assert error.message.startswith("invalid YAML in exp.yaml at line 6, column ")
    assert error.details[0].path.startswith("exp.yaml:6:")


def test_merge_keys_that_repeat_a_map_exponentially_are_refused() -> None:
    lines = ["m0: &m0 {a: 1, b: 2}"]
    lines += [f"m{i}: &m{i} {{<<: [*m{i - 1}, *m{i - 1}], k{i}: 1}}" for i in range(1, 40)]
    assert "more than 100,000 values" in refusal("\n".join(lines)).message


def test_aliases_that_repeat_little_are_accepted() -> None:
    data = parse_yaml(laughs(4), "exp.yaml")  # 9**4 = 6,561 values when expanded
    assert len(data["l3"]) == 9 and data["l3"][0][0][0] == ["lol"] * 9


@pytest.mark.parametrize(
    "text",
    ["a: &a [1, *a]", "a: &a {x: *a}", "a: &a {b: [{c: *a}]}", "a: &a {<<: *a}"],
)
def test_an_anchor_used_inside_itself_is_refused_naming_it(text: str) -> None:
    error = refusal(text)
    assert "the anchor &a is used inside itself (*a)" in error.message
    assert error.message.startswith("invalid YAML in exp.yaml at line 1, column ")


def test_nesting_2000_deep_is_refused_with_a_line_and_column() -> None:
    error = refusal("data: " + "[" * 2000 + "]" * 2000)
    assert error.message == (
        "invalid YAML in exp.yaml at line 1, column 70: nested deeper than 64 levels of maps "
        "and lists"
    )


def test_nesting_up_to_the_limit_is_accepted() -> None:
    # The top map is one level, so 63 lists fit under it.
    data = parse_yaml("data: " + "[" * 63 + "]" * 63, "exp.yaml")
    assert isinstance(data["data"], list)
    assert "nested deeper" in refusal("data: " + "[" * 64 + "]" * 64).message


def test_nesting_built_from_a_chain_of_aliases_is_refused() -> None:
    lines = ["x0: &x0 [1]"] + [f"x{i}: &x{i} [*x{i - 1}]" for i in range(1, 100)]
    error = refusal("\n".join(lines))
    assert "with its aliases expanded, this is nested deeper than 64 levels" in error.message


def test_more_values_than_the_limit_are_refused_while_reading() -> None:
    error = refusal("data: [" + "1," * 100_000 + "1]")
    assert error.message.startswith("invalid YAML in exp.yaml at line 1, column ")
    assert error.message.endswith("the config holds more than 100,000 values")


@pytest.mark.parametrize(
    "number",
    ["9" * 5000, "0x" + "f" * 200, "1" + ":1" * 60_000, "-" + "1" * 101],
    ids=["5000-digits", "long-hex", "base-60", "negative"],
)
def test_an_integer_too_long_to_fit_64_bits_is_refused_before_it_is_converted(
    number: str,
) -> None:
    error = refusal(f"seed: {number}\n")
    assert error.message.startswith("invalid YAML in exp.yaml at line 1, column 7: an integer of")
    assert "integers must fit in 64 bits" in error.message


@pytest.mark.parametrize(
    "text",
    [
        "a: !!timestamp x",
        "a: !!timestamp 2001-99-99",
        "a: !!float x",
        "a: !!int x",
        'a: !!int ""',
        "a: !!int 0x",
        "a: !!bool maybe",
        "a: !!map [1]",
        "a: !!set [1]",
        "a: !!str {}",
        "a: !!python/object:os.system x",
    ],
)
def test_a_malformed_tagged_value_is_a_config_error(text: str) -> None:
    assert refusal(text).message.startswith("invalid YAML in exp.yaml")


def test_bytes_that_are_not_utf8_are_refused_naming_the_offset() -> None:
    data = b"name: ok\nlabels: [caf\xe9]\n"
    error = refusal(data)
    assert error.message == (
        "exp.yaml is not UTF-8 text: byte 0xe9 at offset 21 (line 2, column 13) is not UTF-8; "
        "save the file as UTF-8"
    )
    assert error.details[0].path == "exp.yaml:2:13"


def test_utf8_bytes_are_read_as_text() -> None:
    assert parse_yaml("name: café\n".encode(), "exp.yaml") == {"name": "café"}
    assert decode_config(b"x: 1", "exp.yaml") == "x: 1"


def test_a_control_character_is_refused_with_its_line_and_column() -> None:
    error = refusal("name: ok\nlabels: [a\x85b\x80]\n")
    assert error.message == (
        "invalid YAML in exp.yaml at line 2, column 13: character U+0080 is not allowed in YAML "
        "(control characters and lone surrogates cannot appear in a config)"
    )


@pytest.mark.parametrize("as_bytes", [False, True])
def test_text_over_eight_mebibytes_is_refused_before_it_is_parsed(as_bytes: bool) -> None:
    text = "name: " + "x" * MAX_CONFIG_BYTES
    error = refusal(text.encode() if as_bytes else text)
    unit = "bytes" if as_bytes else "characters"
    assert error.message == (
        f"exp.yaml has 8,388,614 {unit}; a config may have at most 8,388,608 bytes (8 MiB)"
    )


def test_multibyte_text_is_measured_in_utf8_bytes() -> None:
    text = "name: " + "é" * (MAX_CONFIG_BYTES // 2)  # half as many characters as bytes
    assert "has 8,388,614 bytes" in refusal(text).message


def test_duplicate_keys_and_merges_still_behave_under_the_bounded_loader() -> None:
    text = "base: &b {metric: a, name: single}\nsearcher:\n  <<: *b\n  metric: c\n"
    assert parse_yaml(text, "x.yaml")["searcher"] == {"metric": "c", "name": "single"}
    assert "is given twice" in refusal("a: 1\na: 2\n").message
