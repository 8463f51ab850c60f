"""Dependencies shared by the routes: the master, and the bearer token of trial processes."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Header, Request

from assay.master import Master


def get_master(request: Request) -> Master:
    master: Master = request.app.state.master
    return master


def bearer_token(authorization: Annotated[str | None, Header()] = None) -> str | None:
    if authorization and authorization.lower().startswith("bearer "):
        return authorization[7:].strip()
    return None


MasterDep = Annotated[Master, Depends(get_master)]
TokenDep = Annotated[str | None, Depends(bearer_token)]
