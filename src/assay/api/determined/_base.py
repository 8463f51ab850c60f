"""The routers every part of Determined's surface is made of: under ``/det``, answering errors
in Determined's shape, left out of assay's OpenAPI document (it describes assay's own API, and
the web UI's types are made from it; Determined's is described by Determined's own)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query

from assay import rest
from assay.api._deps import MasterDep, TokenDep
from assay.api.determined._errors import DeterminedRoute
from assay.errors import AssayError, Unauthorized
from assay.master.identity import Actor
from assay.protocol import DetEnv
from assay.rest import determined as det

PREFIX = DetEnv.PREFIX
"""Where Determined's paths live on the master: its clients form every URL as ``DET_MASTER``
plus the path, so with ``DET_MASTER=http://HOST:PORT/det`` they never meet assay's own."""


Offset = Annotated[
    int, Query(ge=-rest.INT_MAX, le=rest.INT_MAX, description="From the end when negative.")
]
"""Where a page of a Determined list starts (``det.paginate``)."""
Limit = Annotated[int, Query(ge=0, le=rest.INT_MAX, description="0: all the rest.")]
Order = Annotated[det.OrderBy, Query(alias="orderBy")]


async def det_user(master: MasterDep, token: TokenDep) -> Actor:
    """Who a request to Determined's API comes from: a user, by one of their tokens; or a live
    trial's allocation or task's run, by its token (``DET_USER_TOKEN`` in it), as its
    experiment's or task's owner, as a Determined task's clients act as its owner. assay's own
    API never takes such a token as a user's."""
    try:
        return await master.users.authenticate(token)
    except Unauthorized as refused:
        for owner in (master.harness.owner, master.tasks.owner):
            try:
                return await owner(token)
            except AssayError:
                continue
        raise refused from None  # no live allocation's or run's either: the user's refusal


ActorDep = Annotated[Actor, Depends(det_user)]


def open_router() -> APIRouter:
    """Routes anyone may call (the master's info, signing in)."""
    return APIRouter(prefix=PREFIX, route_class=DeterminedRoute, include_in_schema=False)


def signed_router() -> APIRouter:
    """Routes for a signed-in user: an assay session or access token as ``Bearer``, or a live
    trial's allocation token (:func:`det_user`)."""
    return APIRouter(
        prefix=PREFIX,
        route_class=DeterminedRoute,
        include_in_schema=False,
        dependencies=[Depends(det_user)],
    )
