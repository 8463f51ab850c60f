"""Dependencies shared by the routes: the master, the bearer token of trial processes, and the
integer path parameters (bounded, so an id the database cannot hold is a 400, not a crash)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Header, Path, Request

from assay import rest
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

ExperimentId = Annotated[int, Path(ge=0, le=rest.INT_MAX, description="An experiment's id.")]
TrialId = Annotated[int, Path(ge=0, le=rest.INT_MAX, description="A trial's id.")]
ContextId = Annotated[int, Path(ge=0, le=rest.INT_MAX, description="A context's id.")]
