"""Keeping secret environment variable values out of what the master shows.

An ``environment.environment_variables`` entry written ``{name, value, secret: true}`` is
secret, and so are a storage section's credentials (:data:`STORAGE_SECRET_KEYS`). The stored
config keeps the real value (the trial must get it); what the API returns and what the master
stores of a trial's output has it replaced by :data:`MASK`: the entry's own value whatever its
length, and every occurrence of a secret value in other text where the value has
at least :data:`MIN_MASKED_LENGTH` characters (a shorter one would mask half of every line).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

import yaml

from assay.config._jobspec import JobSpec
from assay.config._yaml import parse_yaml
from assay.config.openpai._templates import job_secret_values
from assay.errors import InvalidConfig

MASK = "********"
MIN_MASKED_LENGTH = 4

STORAGE_SECRET_KEYS = ("access_key", "secret_key", "connection_string", "credential")
"""The keys of a storage section (``checkpoint_storage``, ``tensorboard_storage``) that hold
credentials: secret whether or not they are marked so."""

_STORAGE_SECTIONS = ("checkpoint_storage", "tensorboard_storage")


def _storage_secrets(config: Any) -> list[str]:
    if not isinstance(config, Mapping):
        return []
    return [
        value
        for section in _STORAGE_SECTIONS
        if isinstance(storage := config.get(section), Mapping)
        for key in STORAGE_SECRET_KEYS
        if isinstance(value := storage.get(key), str) and value
    ]


def _is_secret_entry(value: Any) -> bool:
    return isinstance(value, dict) and value.get("secret") is True and "value" in value


def secret_values(config: Any) -> list[str]:
    """The values of the secret environment variables of a config, stored or as written (a
    list of entries or a map of device types to such lists); of a :class:`JobSpec`, its
    secrets and its variables marked secret."""
    if isinstance(config, JobSpec):
        return job_secret_values(config)
    env = config.get("environment") if isinstance(config, Mapping) else None
    variables = env.get("environment_variables") if isinstance(env, Mapping) else None
    lists = list(variables.values()) if isinstance(variables, Mapping) else [variables]
    return sorted(
        {
            entry["value"]
            for entries in lists
            if isinstance(entries, list)
            for entry in entries
            if _is_secret_entry(entry) and isinstance(entry["value"], str)
        }
        | set(_storage_secrets(config))
    )


def secret_pattern(values: Iterable[str]) -> re.Pattern[str] | None:
    """One regex matching every occurrence, in free text, of the values long enough to mask
    there, and of each line of a multi-line value (text is often shown line by line); None when
    there is none."""
    parts = {
        part
        for value in values
        for part in (value, *(line.strip() for line in value.splitlines()))
        if len(part) >= MIN_MASKED_LENGTH
    }
    # Longest first, so that a secret which contains another is masked whole.
    return _compiled(tuple(sorted(parts, key=lambda p: (-len(p), p))))


@functools.lru_cache(maxsize=256)
def _compiled(parts: tuple[str, ...]) -> re.Pattern[str] | None:
    return re.compile("|".join(map(re.escape, parts))) if parts else None


def mask_text(text: str, pattern: re.Pattern[str] | None) -> str:
    """``text`` with every match of ``pattern`` (from :func:`secret_pattern`) masked."""
    return text if pattern is None else pattern.sub(MASK, text)


def masked_by_config(text: str, config: Mapping[str, Any]) -> str:
    """``text`` (the experiment's name, description or message: free text that may have been
    copied from its config) with every secret value of ``config`` in it masked."""
    values = secret_values(config)
    return mask_text(text, secret_pattern(values)) if values else text


def _scrub(value: Any, pattern: re.Pattern[str] | None) -> Any:
    if isinstance(value, str):
        return mask_text(value, pattern)
    if isinstance(value, list):
        return [_scrub(item, pattern) for item in value]
    if isinstance(value, dict):
        out = {_scrub(k, pattern): _scrub(v, pattern) for k, v in value.items()}
        if _is_secret_entry(value):
            out["value"] = MASK
        return out
    return value


def masked_config(config: dict[str, Any]) -> dict[str, Any]:
    """``config`` (as stored: JSON) as the API shows it: each secret entry's value, and every
    occurrence of a secret value in its other strings, replaced by :data:`MASK`."""
    values = secret_values(config)
    if not values:
        return config
    masked: dict[str, Any] = _scrub(config, secret_pattern(values))
    for section in _STORAGE_SECTIONS:
        storage = masked.get(section)
        if isinstance(storage, dict):
            masked[section] = {
                k: MASK if k in STORAGE_SECRET_KEYS and isinstance(v, str) and v else v
                for k, v in storage.items()
            }
    return masked


def masked_config_text(text: str, config: dict[str, Any]) -> str:
    """The config ``text`` as written, as the API shows it, given ``config``, the config stored
    from it (overrides applied).

    The text keeps its layout and comments, which is why it is returned at all. Each scalar
    that is the value of an entry marked secret, or that holds a secret value (of the text's or
    the stored config's entries), is rewritten in place as a quoted string with the secret
    masked (a scalar's written form may escape or fold it, so it is read from the parsed
    value); then any occurrence left, in comments, is masked too. If a secret could still be
    read from the result, or it no longer parses, the text is rendered again from its masked
    data instead, losing its comments but nothing secret.
    """
    if "secret" not in text and not secret_values(config):
        return text
    try:
        return _masked_text(text, config)
    except Exception:
        # The master accepted this text once, so it parses; should anything still go wrong,
        # an API read must neither fail nor show a secret: show the stored config instead.
        return yaml.safe_dump(masked_config(config), sort_keys=False, allow_unicode=True)


def _masked_text(text: str, config: dict[str, Any]) -> str:
    raw = parse_yaml(text, "<config>")
    values = sorted({*secret_values(config), *secret_values(raw)})
    if not values:
        return text
    pattern = secret_pattern(values)
    masked = mask_text(_mask_scalars(text, pattern), pattern)
    try:
        shown = parse_yaml(masked, "<config>")
    except InvalidConfig:
        shown = None
    if shown is not None and _scrub(shown, pattern) == shown:
        return masked
    return yaml.safe_dump(_scrub(raw, pattern), sort_keys=False, allow_unicode=True)


def _mask_scalars(text: str, pattern: re.Pattern[str] | None) -> str:
    """``text`` with every scalar that needs masking written again as a JSON string (which
    YAML reads as a double-quoted scalar): the ``value`` of a map whose ``secret`` key is not
    plainly false, and any scalar that ``pattern`` matches (keys too), wherever it is (an
    anchored scalar is rewritten once, where it is defined)."""
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    spans: dict[tuple[int, int], str] = {}
    seen: set[int] = set()
    stack = [root] if root is not None else []
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.ScalarNode) and pattern is not None and pattern.search(node.value):
            spans.setdefault(_span(node), mask_text(node.value, pattern))
        elif isinstance(node, yaml.MappingNode):
            keys = {k.value: v for k, v in node.value if isinstance(k, yaml.ScalarNode)}
            flag, value = keys.get("secret"), keys.get("value")
            if flag is not None and value is not None and not _plainly_false(flag):
                spans[_span(value)] = MASK
            stack.extend(n for pair in node.value for n in pair)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
    for (start, end), shown in sorted(spans.items(), reverse=True):
        written = text[start:end]
        # Keep the scalar's anchor (its aliases need it) but not its tag (``!!bool`` would not
        # read a masked string), and what its span ends with (a block scalar's line breaks).
        properties = match.group() if (match := _PROPERTIES.match(written)) else ""
        head = "".join(f"{p} " for p in properties.split() if p.startswith("&"))
        tail = written[len(written.rstrip()) :]
        text = text[:start] + head + json.dumps(shown, ensure_ascii=False) + tail + text[end:]
    return text


# An anchor (``&name``) and a tag (``!t``), each followed by spaces, may come before a scalar.
_PROPERTIES = re.compile(r"(?:[&!]\S*\s+)*")


def _span(node: yaml.Node) -> tuple[int, int]:
    return node.start_mark.index, node.end_mark.index


def _plainly_false(node: yaml.Node) -> bool:
    return (
        isinstance(node, yaml.ScalarNode)
        and node.tag == "tag:yaml.org,2002:bool"
        and node.value.lower() in ("false", "no", "off")
    )
