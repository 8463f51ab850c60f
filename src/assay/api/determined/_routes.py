"""Determined's master info, signing in and out (Determined's client-side password hash
included), and users, for the real ``det`` CLI and Determined's Python SDK. Tokens are assay's:
a session from ``POST /det/api/v1/auth/login`` or an access token (``assay token create``),
sent as ``Authorization: Bearer <token>``."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request, Response

from assay import rest
from assay.api._deps import MasterDep
from assay.api._users import LoginLimits
from assay.api.determined._base import PREFIX, ActorDep, Limit, Offset, open_router, signed_router
from assay.api.determined._errors import DeterminedRoute, det_response
from assay.rest import determined as det

router = open_router()
signed_in = signed_router()
misdirected = APIRouter(route_class=DeterminedRoute, include_in_schema=False)
"""What Determined's clients read first when ``DET_MASTER`` lacks ``/det``."""

UserId = Annotated[int, Path(ge=0, le=rest.INT_MAX, description="A user's id.")]
Username = Annotated[str, Path(max_length=64, pattern=rest.USERNAME_PATTERN)]


@misdirected.get("/info")
async def misdirected_info(request: Request) -> Response:
    """``det`` asks for ``/info`` before every command: where ``DET_MASTER`` names the master
    without ``/det``, each command then says in one line what to set, instead of failing on
    the web UI's page."""
    base = str(request.base_url).rstrip("/")
    return det_response(
        404,
        f"this is an assay master, which serves Determined's API under {PREFIX}: "
        f"export DET_MASTER={base}{PREFIX}",
    )


@router.get("/info")
async def info(master: MasterDep) -> det.MasterInfo:
    """What every ``det`` command reads first: the Determined version this master speaks."""
    return master_info(master.reads.info())


@router.get("/api/v1/master")
async def get_master(master: MasterDep) -> det.GetMasterResponse:
    """``det master info``."""
    return get_master_response(master.reads.info())


@router.post("/api/v1/auth/login")
async def login(body: det.Login, master: MasterDep, request: Request) -> det.LoginResponse:
    """A session token for the user (``det user login``; ``DET_USER`` and ``DET_PASS``)."""
    limits: LoginLimits = request.app.state.login_limits
    limits.check(request.client.host if request.client else "", body.username)
    return await master.users.login_determined(body)


@signed_in.post("/api/v1/auth/logout")
async def logout(master: MasterDep, actor: ActorDep) -> det.LogoutResponse:
    """End the session (or revoke the access token) the request is signed in with."""
    await master.users.logout(actor)
    return det.LogoutResponse()


@signed_in.get("/api/v1/me")
async def me(master: MasterDep, actor: ActorDep) -> det.UserResponse:
    return await master.users.determined_me(actor)


@signed_in.get("/api/v1/users")
async def users(
    master: MasterDep,
    active: bool | None = None,
    admin: bool | None = None,
    name: Annotated[str | None, Query(max_length=64, pattern=rest.NO_NUL)] = None,
    offset: Offset = 0,
    limit: Limit = 0,
) -> det.UserList:
    """``det user list``: users matching every filter given, by id, paged from ``offset``."""
    return await master.users.determined_users(
        active=active, admin=admin, name=name, offset=offset, limit=limit
    )


@signed_in.get("/api/v1/users/{user_id}")
async def user(user_id: UserId, master: MasterDep) -> det.UserResponse:
    return await master.users.determined_user(user_id)


@signed_in.get("/api/v1/users/{username}/by-username")
async def user_named(username: Username, master: MasterDep) -> det.UserResponse:
    return await master.users.determined_user_named(username)


def master_info(info: rest.MasterInfo) -> det.MasterInfo:
    """The master as ``GET /info`` names it to Determined's clients."""
    return det.MasterInfo(
        version=det.DETERMINED_VERSION,
        master_id=_master_id(info),
        cluster_id=info.cluster_id,
        cluster_name=CLUSTER_NAME,
    )


def get_master_response(info: rest.MasterInfo) -> det.GetMasterResponse:
    """The master as ``GET /api/v1/master`` describes it to Determined's clients: no RBAC,
    no single sign-on, users managed here."""
    return det.GetMasterResponse(
        version=det.DETERMINED_VERSION,
        master_id=_master_id(info),
        cluster_id=info.cluster_id,
        cluster_name=CLUSTER_NAME,
    )


CLUSTER_NAME = "assay"
"""What Determined's clients show as the cluster's name."""


def _master_id(info: rest.MasterInfo) -> str:
    # Determined's master id changes with each start of the master; the cluster id does not.
    return f"{info.cluster_id}-{int(info.started_at)}"
