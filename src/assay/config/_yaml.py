"""Reading config text (YAML, and so JSON): bounded in size, nesting and alias expansion, so that
no text, however hostile, costs more than a glance to refuse.

PyYAML composes an alias as the node it names, so the parsed data shares that node rather than
copying it: a few hundred bytes of aliases ("billion laughs") parse quickly and then explode in
whatever walks them as a tree (validation, JSON, the database). The loader therefore counts the
values the text stands for, each alias as the values it repeats, before anything is built, and
refuses the text past :data:`~assay.config._limits.MAX_NODES`; it refuses an anchor used inside
itself (a structure that contains itself) and nesting past
:data:`~assay.config._limits.MAX_DEPTH`, and it catches the constructors' own errors on explicit
tags (``!!int x``) so that every problem is an :class:`~assay.errors.InvalidConfig` with a line
and a column.
"""

from __future__ import annotations

import re
from typing import Any

import yaml
from yaml.composer import ComposerError
from yaml.constructor import ConstructorError

from assay.config._limits import MAX_CONFIG_BYTES, MAX_DEPTH, MAX_NODES, count
from assay.errors import ErrorDetail, InvalidConfig

# A 64-bit integer takes at most 66 characters (0b and 64 binary digits). Longer ones are refused
# before int() is asked: Python refuses decimal strings over 4300 digits with a ValueError, and
# YAML 1.1's base-60 integers (1:2:3:...) grow quadratically in cost.
_MAX_INT_CHARS = 100
_COLLECTION_STARTS = (yaml.MappingStartEvent, yaml.SequenceStartEvent)
# What PyYAML's constructors raise on a malformed explicitly tagged value (``!!bool x``).
_CONSTRUCTOR_SLIPS = (ValueError, TypeError, KeyError, IndexError, AttributeError, OverflowError)


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader, bounded as the module says and adjusted to read configs as
    Determined (Go's YAML) does: ``1e-3`` is a float, dates stay strings, and a key given twice is
    an error rather than silently overwritten."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._written = 0
        self._anchor_of: dict[int, str] = {}

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        # Any: the stubs know neither events' anchors nor one kind of mark.
        event: Any = self.peek_event()  # type: ignore[no-untyped-call]
        if isinstance(event, yaml.AliasEvent):
            return super().compose_node(parent, index)
        self._written += 1
        if self._written > MAX_NODES:
            problem = f"the config holds more than {count(MAX_NODES)} values"
            raise ComposerError(None, None, problem, event.start_mark)
        nested = isinstance(event, _COLLECTION_STARTS)
        self._depth += nested
        try:
            if self._depth > MAX_DEPTH:
                raise ComposerError(
                    None,
                    None,
                    f"nested deeper than {MAX_DEPTH} levels of maps and lists",
                    event.start_mark,
                )
            node = super().compose_node(parent, index)
        finally:
            self._depth -= nested
        if event.anchor is not None:
            self._anchor_of[id(node)] = event.anchor
        return node

    def get_single_data(self) -> Any:
        node = self.get_single_node()
        if node is None:
            return None
        self._check_expansion(node)
        return self.construct_document(node)

    def _check_expansion(self, root: yaml.Node) -> None:
        """Refuse a node graph that is not a tree of bounded size and depth once every alias is
        expanded: each node's expanded size and depth are found once (post-order, iteratively),
        so the walk costs the nodes as written, not as expanded."""
        size: dict[int, int] = {}
        depth: dict[int, int] = {}
        open_: set[int] = set()  # begun and not finished: the path from the root
        stack: list[tuple[yaml.Node, bool]] = [(root, False)]
        while stack:
            node, finished = stack.pop()
            key = id(node)
            if not finished and key in size:
                continue  # met again through another alias
            kids = _children(node)
            if finished:
                open_.discard(key)
                size[key] = 1 + sum(size[id(k)] for k in kids)
                depth[key] = isinstance(node, yaml.CollectionNode) + max(
                    (depth[id(k)] for k in kids), default=0
                )
                if size[key] > MAX_NODES:
                    raise ComposerError(
                        None,
                        None,
                        f"with its aliases expanded, this holds more than {count(MAX_NODES)} "
                        "values; write the repeated parts out, or repeat them less",
                        node.start_mark,
                    )
                if depth[key] > MAX_DEPTH:
                    raise ComposerError(
                        None,
                        None,
                        f"with its aliases expanded, this is nested deeper than {MAX_DEPTH} "
                        "levels of maps and lists",
                        node.start_mark,
                    )
                continue
            open_.add(key)
            stack.append((node, True))
            for kid in kids:
                if id(kid) in open_:
                    name = self._anchor_of.get(id(kid), "?")
                    raise ComposerError(
                        None,
                        None,
                        f"the anchor &{name} is used inside itself (*{name}): a config cannot "
                        "contain itself",
                        kid.start_mark,
                    )
                if id(kid) not in size:
                    stack.append((kid, False))

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep=deep)
        except _CONSTRUCTOR_SLIPS as exc:
            raise ConstructorError(
                None, None, f"cannot read this {_tag_name(node.tag)} value: {exc}", node.start_mark
            ) from None

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        text = self.construct_scalar(node)
        if len(text) > _MAX_INT_CHARS:
            raise ConstructorError(
                None,
                None,
                f"an integer of {count(len(text))} characters is out of range (integers must "
                "fit in 64 bits)",
                node.start_mark,
            )
        value: int = super().construct_yaml_int(node)
        return value

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, yaml.Node] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.setdefault(key, key_node)
            except TypeError:
                continue  # an unhashable key; the base constructor says what is wrong
            if first is not key_node:
                raise ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    f"key {key!r} is given twice (first on line {first.start_mark.line + 1})",
                    key_node.start_mark,
                )
        return super().construct_mapping(node, deep=deep)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def _tag_name(tag: str) -> str:
    return tag.replace("tag:yaml.org,2002:", "!!")


_Loader.add_constructor("tag:yaml.org,2002:int", _Loader.construct_yaml_int)
_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)


def decode_config(data: bytes, source: str) -> str:
    """The text of config bytes: UTF-8, at most :data:`~assay.config._limits.MAX_CONFIG_BYTES`.

    Anything else is refused naming the first byte that cannot be decoded, its offset, line and
    column.
    """
    _check_size(len(data), "bytes", source)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        at = exc.start
        line = data.count(b"\n", 0, at) + 1
        column = at - (data.rfind(b"\n", 0, at) + 1) + 1
        problem = (
            f"byte 0x{data[at]:02x} at offset {at} (line {line}, column {column}) is not UTF-8"
        )
        raise InvalidConfig(
            f"{source} is not UTF-8 text: {problem}; save the file as UTF-8",
            [ErrorDetail(f"{source}:{line}:{column}", problem)],
        ) from None


def _check_size(size: int, unit: str, source: str) -> None:
    if size > MAX_CONFIG_BYTES:
        raise config_too_large(source, f"{count(size)} {unit}")


def config_too_large(source: str, size: int | str | None = None) -> InvalidConfig:
    """The refusal of a config over :data:`~assay.config._limits.MAX_CONFIG_BYTES`: ``size``
    in bytes, or as words (``"2,000,000 characters"``); None when only its first bytes were
    read (a reader stops one byte past the limit, whatever the file or device)."""
    if size is None:
        shown = f"more than {count(MAX_CONFIG_BYTES)} bytes"
    else:
        shown = size if isinstance(size, str) else f"{count(size)} bytes"
    return InvalidConfig(
        f"{source} has {shown}; a config may have at most {count(MAX_CONFIG_BYTES)} bytes "
        f"({MAX_CONFIG_BYTES // 2**20} MiB)"
    )


def parse_yaml(text: str | bytes, source: str) -> Any:
    """The data in YAML ``text`` (bytes are read as UTF-8); ``source`` (a file name) is named in
    errors with the line and column of the problem."""
    if isinstance(text, bytes):
        text = decode_config(text, source)
    else:
        _check_size(len(text), "characters", source)
        if len(text) * 4 > MAX_CONFIG_BYTES:  # a character takes 1 to 4 bytes in UTF-8
            _check_size(len(text.encode("utf-8", "surrogatepass")), "bytes", source)
    try:
        return yaml.load(text, Loader=_Loader)
    except yaml.reader.ReaderError as exc:
        raise _reader_error(exc, text, source) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "malformed YAML"
        if mark is None:
            raise InvalidConfig(f"invalid YAML in {source}: {problem}") from None
        line, column = mark.line + 1, mark.column + 1
        raise InvalidConfig(
            f"invalid YAML in {source} at line {line}, column {column}: {problem}",
            [ErrorDetail(f"{source}:{line}:{column}", problem)],
        ) from None
    except yaml.YAMLError as exc:
        raise InvalidConfig(f"invalid YAML in {source}: {exc}") from None
    except _CONSTRUCTOR_SLIPS as exc:
        # A malformed tagged collection (``!!map [1]``), met after its node was begun.
        problem = f"cannot read a tagged value: {exc}"
        raise InvalidConfig(f"invalid YAML in {source}: {problem}") from None


def _reader_error(exc: yaml.reader.ReaderError, text: str, source: str) -> InvalidConfig:
    at = exc.position
    line = text.count("\n", 0, at) + 1
    column = at - (text.rfind("\n", 0, at) + 1) + 1
    character = exc.character if isinstance(exc.character, int) else ord(str(exc.character))
    problem = (
        f"character U+{character:04X} is not allowed in YAML (control characters and lone "
        "surrogates cannot appear in a config)"
    )
    return InvalidConfig(
        f"invalid YAML in {source} at line {line}, column {column}: {problem}",
        [ErrorDetail(f"{source}:{line}:{column}", problem)],
    )
