"""The UI's TypeScript types are those the API's OpenAPI document makes today."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from assay.api import write_openapi
from tests.e2e.conftest import need

WEB = Path(__file__).resolve().parents[2] / "web"
GENERATOR = WEB / "node_modules" / ".bin" / "openapi-typescript"


def test_the_committed_typescript_types_match_the_api(tmp_path: Path) -> None:
    need(None if shutil.which("node") else "node is not installed")
    need(None if GENERATOR.exists() else "web/node_modules is missing: run make webui")
    write_openapi(tmp_path / "openapi.json")
    subprocess.run(
        [str(GENERATOR), str(tmp_path / "openapi.json"), "-o", str(tmp_path / "schema.d.ts")],
        check=True,
        capture_output=True,
        timeout=120,
    )
    fresh = (tmp_path / "schema.d.ts").read_text()
    committed = (WEB / "src" / "api" / "schema.d.ts").read_text()
    assert fresh == committed, "web/src/api/schema.d.ts is stale: run make webui-types"
