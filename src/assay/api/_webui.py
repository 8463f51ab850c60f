"""The web UI, served by the master at ``/`` from the built bundle in ``assay/webui/dist``.

The bundle is built from ``web/`` by ``make webui`` and is not committed. The UI routes on the
client, so every GET outside the API and the docs answers ``index.html`` and the page's router
takes it from there. Vite names each asset by its content hash, so assets are cached for a year;
``index.html`` is revalidated on every load, so a rebuilt UI is picked up at once.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, HTMLResponse, Response

from assay.errors import NotFound

DIST = Path(__file__).resolve().parent.parent / "webui" / "dist"
"""Where ``make webui`` puts the built UI (inside the package, so an editable install has it)."""

_SERVER_PREFIXES = ("api/", "docs", "redoc", "openapi.json")
"""Paths that belong to the server: an unknown one among them is a 404, never the UI's page."""

_IMMUTABLE = "public, max-age=31536000, immutable"
_REVALIDATE = "no-cache"

MISSING_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>assay</title></head>
<body style="font-family: sans-serif; max-width: 40em; margin: 3em auto">
<h1>assay</h1>
<p>The web UI is not built. Build it from the source tree with <code>make webui</code>
(it needs Node.js and npm), then reload this page.</p>
<p>The REST API works without it: see <a href="/docs">/docs</a>.</p>
</body></html>
"""


_ANY_METHOD = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"]


def install_webui(app: FastAPI, dist: Path = DIST) -> None:
    """Serve the UI in ``dist`` at ``/`` on ``app``; add this after every other route, since its
    catch-all route answers any GET no other route does."""

    # Every method, so that a path no route has is the API's 404 for any method (a GET-only
    # catch-all would answer other methods 405, as if the path existed).
    @app.api_route("/{path:path}", methods=_ANY_METHOD, include_in_schema=False)
    async def webui(request: Request, path: str) -> Response:
        if path.startswith(_SERVER_PREFIXES) or request.method not in ("GET", "HEAD"):
            raise NotFound(f"no such path: {request.method} /{path}")
        index = dist / "index.html"
        if not index.is_file():
            return HTMLResponse(MISSING_PAGE, headers={"Cache-Control": _REVALIDATE})
        asset = _asset(dist, path)
        if asset is not None:
            hashed = path.startswith("assets/")
            return FileResponse(
                asset, headers={"Cache-Control": _IMMUTABLE if hashed else _REVALIDATE}
            )
        return FileResponse(index, headers={"Cache-Control": _REVALIDATE})


def _asset(dist: Path, path: str) -> Path | None:
    """The file ``path`` names inside ``dist``, or None (no such file, or it would be outside)."""
    if not path:
        return None
    root = dist.resolve()
    candidate = (root / path).resolve()
    if not candidate.is_relative_to(root) or not candidate.is_file():
        return None
    return candidate
