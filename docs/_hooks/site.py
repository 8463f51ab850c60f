"""MkDocs hooks: the pages made from the code, so that none can drift from it.

- ``index.md``: the README (its links rewritten for the site);
- ``reference/cli.md``: every command's help, walked from the ``assay`` command tree;
- ``reference/rest.md``: every route of the master's OpenAPI document;
- ``reference/config.md``: every key of the experiment config, ``master.yaml`` and the agent's
  settings, from their pydantic models (type, default, description).

Each is made at build time and never written into ``docs/``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]

# -- the README as the home page ------------------------------------------------------------------

_LINK = re.compile(r"\[([^\]]*)\]\(([^)\s]+)\)")


def _rewrite(match: re.Match[str]) -> str:
    text, target = match[1], match[2]
    if target.startswith(("http://", "https://", "mailto:", "#")):
        return match[0]
    if target.startswith("docs/"):
        return f"[{text}]({target.removeprefix('docs/')})"
    # A file of the source tree (an example's folder): the site has no page for it, so the
    # path is shown for readers of a clone.
    return f"{text} (`{target}`)"


def readme_page() -> str:
    return _LINK.sub(_rewrite, (ROOT / "README.md").read_text(encoding="utf-8"))


# -- the command line -----------------------------------------------------------------------------


def _commands(cmd: Any, ctx: Any, path: list[str]) -> Iterator[tuple[list[str], Any]]:
    yield path, cmd
    if not hasattr(cmd, "list_commands"):
        return
    for name in cmd.list_commands(ctx):
        sub = cmd.get_command(ctx, name)
        if sub is None or getattr(sub, "hidden", False):
            continue
        yield from _commands(sub, type(ctx)(sub, info_name=name, parent=ctx), [*path, name])


def cli_page() -> str:
    from click.testing import CliRunner

    from assay.cli._app import command

    root = command()
    context_type = type(root.make_context("assay", ["--help"], resilient_parsing=True))
    runner = CliRunner()
    lines = [
        "# Command line reference",
        "",
        "Every command of `assay`, with the help it prints (`assay COMMAND --help`). Made from "
        "the command tree when this site is built.",
        "",
    ]
    walked = list(_commands(root, context_type(root, info_name="assay"), []))
    for path, _ in walked:
        shown = runner.invoke(root, [*path, "--help"], prog_name="assay", terminal_width=100)
        if shown.exit_code != 0:
            raise RuntimeError(f"assay {' '.join(path)} --help failed: {shown.output}")
        title = " ".join(["assay", *path])
        lines += [f"{'#' * min(2 + len(path), 4)} {title}", "", "```text", shown.output.rstrip()]
        lines += ["```", ""]
    return "\n".join(lines)


# -- the REST API ---------------------------------------------------------------------------------


def _schema_name(schema: dict[str, Any]) -> str:
    if "$ref" in schema:
        return "`" + schema["$ref"].rsplit("/", 1)[-1] + "`"
    if schema.get("type") == "array":
        return "list of " + _schema_name(schema.get("items", {}))
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return " or ".join(_schema_name(s) for s in schema[key])
    return f"`{schema.get('type', 'any')}`"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def rest_page() -> str:
    from assay.api import openapi_document

    doc = openapi_document()
    by_tag: dict[str, list[tuple[str, str, dict[str, Any]]]] = {}
    for path, methods in doc["paths"].items():
        for method, op in methods.items():
            by_tag.setdefault((op.get("tags") or ["other"])[0], []).append((method, path, op))
    lines = [
        "# REST API reference",
        "",
        "Every route of the master, from its OpenAPI document (a running master serves it at "
        "`/openapi.json`, with Swagger UI at `/docs` and ReDoc at `/redoc`). Made when this site "
        "is built. Determined's own routes, under `/det`, are described in "
        "[Coming from Determined](../determined.md).",
        "",
    ]
    for tag in sorted(by_tag):
        lines += [f"## {tag}", ""]
        for method, path, op in sorted(by_tag[tag], key=lambda m: (m[1], m[0])):
            lines += [f"### `{method.upper()} {path}`", ""]
            if op.get("description") or op.get("summary"):
                lines += [op.get("description") or op["summary"], ""]
            params = op.get("parameters", [])
            if params:
                lines += [
                    "| parameter | in | type | required | description |",
                    "|---|---|---|---|---|",
                ]
                for p in params:
                    lines.append(
                        f"| `{p['name']}` | {p['in']} | {_schema_name(p.get('schema', {}))} | "
                        f"{'yes' if p.get('required') else 'no'} | "
                        f"{_cell(p.get('description', ''))} |"
                    )
                lines.append("")
            body = op.get("requestBody", {}).get("content", {})
            for media, content in body.items():
                lines += [f"Body ({media}): {_schema_name(content.get('schema', {}))}", ""]
            answers = [
                f"{code} {_cell(r.get('description', ''))}"
                + "".join(
                    f": {_schema_name(c['schema'])}"
                    for c in r.get("content", {}).values()
                    if "schema" in c
                )[:200]
                for code, r in sorted(op.get("responses", {}).items())
            ]
            lines += ["Answers: " + "; ".join(answers), ""]
    lines += ["## Schemas", ""]
    for name, schema in sorted(doc.get("components", {}).get("schemas", {}).items()):
        lines += [f"### `{name}`", "", _cell(schema.get("description", "")), ""]
        fields = schema.get("properties", {})
        if fields:
            lines += ["| field | type | description |", "|---|---|---|"]
            for field, spec in fields.items():
                lines.append(
                    f"| `{field}` | {_schema_name(spec)} | {_cell(spec.get('description', ''))} |"
                )
            lines.append("")
    return "\n".join(lines)


# -- the configs ----------------------------------------------------------------------------------


def _resolve(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = {
            **defs[schema["$ref"].rsplit("/", 1)[-1]],
            **{k: v for k, v in schema.items() if k != "$ref"},
        }
    return schema


WRITTEN_AS = {
    "Length": "length: `{batches: N}`, `{records: N}` or `{epochs: N}` (a number where the "
    "searcher's `time_metric` says what it counts)",
}
"""Sections whose model reads a shape other than its fields: shown as written in a config."""


def _type_text(schema: dict[str, Any], defs: dict[str, Any]) -> str:
    schema = _resolve(schema, defs)
    if schema.get("title") in WRITTEN_AS:
        return WRITTEN_AS[schema["title"]]
    if "const" in schema:
        return json.dumps(schema["const"])
    if "enum" in schema:
        return " | ".join(json.dumps(v) for v in schema["enum"])
    for key in ("anyOf", "oneOf"):
        if key in schema:
            parts = [_type_text(s, defs) for s in schema[key]]
            tags = [_tag(_resolve(s, defs)) for s in schema[key]]
            named = [t for t in tags if t is not None]
            if len(named) > 1:
                rest = [p for p, t in zip(parts, tags, strict=True) if t is None]
                return " or ".join([f"section: one of {', '.join(named)}", *rest])
            return " or ".join(parts)
    kind = schema.get("type", "any")
    if kind == "array":
        return f"list of {_type_text(schema.get('items', {}), defs)}"
    if kind == "object" and "title" in schema and "properties" in schema:
        return "section"
    return str(kind)


def _tag(schema: dict[str, Any]) -> str | None:
    """The value that picks this variant of a union (its ``name`` or ``type``), if it has one."""
    for field in schema.get("properties", {}).values():
        if "const" in field:
            return str(field["const"])
    return None


def _objects(schema: dict[str, Any], defs: dict[str, Any]) -> list[dict[str, Any]]:
    """The object schemas a key may hold (several for a union, such as the searchers)."""
    schema = _resolve(schema, defs)
    found: list[dict[str, Any]] = []
    if schema.get("title") in WRITTEN_AS:
        return found
    if schema.get("properties"):
        found.append(schema)
    for key in ("anyOf", "oneOf", "allOf"):
        for sub in schema.get(key, []):
            found += _objects(sub, defs)
    if schema.get("type") == "array":
        found += _objects(schema.get("items", {}), defs)
    return found


def attribute_docs() -> dict[str, dict[str, str]]:
    """Each config class's fields' docstrings (the string under a field), read from the source:
    pydantic's ``use_attribute_docstrings`` would read them at every import of the configs."""
    import ast

    found: dict[str, dict[str, str]] = {}
    for module in sorted((ROOT / "src" / "assay" / "config").rglob("*.py")):
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ClassDef):
                continue
            fields = found.setdefault(node.name, {})
            for field, after in zip(node.body, node.body[1:], strict=False):
                if (
                    isinstance(field, ast.AnnAssign)
                    and isinstance(field.target, ast.Name)
                    and isinstance(after, ast.Expr)
                    and isinstance(after.value, ast.Constant)
                    and isinstance(after.value.value, str)
                ):
                    fields[field.target.id] = " ".join(after.value.value.split())
    return found


def _keys(
    schema: dict[str, Any],
    defs: dict[str, Any],
    docs: dict[str, dict[str, str]],
    prefix: str,
    seen: frozenset[str],
) -> Iterator[tuple[str, str, str, str]]:
    documented = docs.get(schema.get("title", ""), {})
    for name, spec in schema.get("properties", {}).items():
        key = f"{prefix}{name}"
        default = json.dumps(spec["default"]) if "default" in spec else ""
        description = (
            spec.get("description")
            or documented.get(name)
            or _resolve(spec, defs).get("description", "")
        )
        yield key, _type_text(spec, defs), default, description
        sections = _objects(spec, defs)
        for sub in sections:
            title = sub.get("title", "")
            if title in seen:
                continue  # a recursive section (nested hyperparameters): listed once
            tag = _tag(sub)
            variant = f"[{tag}]" if tag is not None and len(sections) > 1 else ""
            yield from _keys(sub, defs, docs, f"{key}{variant}.", seen | {title})


def config_section(
    title: str, intro: str, model: Any, docs: dict[str, dict[str, str]]
) -> list[str]:
    schema = model.model_json_schema(mode="validation")
    defs = schema.get("$defs", {})
    lines = [
        f"## {title}",
        "",
        intro,
        "",
        "| key | type | default | description |",
        "|---|---|---|---|",
    ]
    for key, kind, default, description in _keys(
        schema, defs, docs, "", frozenset({schema.get("title", "")})
    ):
        lines.append(f"| `{key}` | {_cell(kind)} | {_cell(default)} | {_cell(description)} |")
    return [*lines, ""]


def config_page() -> str:
    from assay.config import ExperimentConfig, MasterConfig

    docs = attribute_docs()
    lines = [
        "# Config reference",
        "",
        "Every key assay reads, from the models that read them (made when this site is built). "
        "A key written `searcher[random].max_trials` belongs to the `random` variant of its "
        "section, chosen by the section's `name` or `type`. See [Experiment configs]"
        "(../experiment-config.md) for how configs are read and checked.",
        "",
    ]
    lines += config_section(
        "Experiment config",
        "What `assay experiment create CONFIG` reads: Determined's experiment config, extended.",
        ExperimentConfig,
        docs,
    )
    lines += config_section(
        "Master config (`master.yaml`)",
        "What `assay master --config master.yaml` and `assay up --config` read.",
        MasterConfig,
        docs,
    )
    return "\n".join(lines)


# -- the hook -------------------------------------------------------------------------------------

GENERATED = {
    "index.md": readme_page,
    "reference/cli.md": cli_page,
    "reference/rest.md": rest_page,
    "reference/config.md": config_page,
}


def on_files(files: Files, config: MkDocsConfig) -> Files:
    for path, make in GENERATED.items():
        files.append(File.generated(config, path, content=make()))
    return files
