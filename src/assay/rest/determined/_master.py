"""The master's identity as Determined's clients read it: ``GET /info`` (every ``det`` command
reads it first) and ``GET /api/v1/master`` (``det master info``)."""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field

from assay.rest._common import Resource
from assay.rest.determined._common import DetResource


class Telemetry(Resource):
    """Whether the master reports usage: assay never does."""

    enabled: bool = False
    segment_key: str | None = None
    otel_enabled: bool = False
    otel_endpoint: str = ""


class SsoProviderInfo(Resource):
    """A single sign-on provider as ``/info`` names one (assay has none)."""

    sso_url: str
    name: str
    type: str
    always_redirect: bool = False


class MasterInfo(Resource):
    """``GET /info``: snake_case, as Determined's master writes its ``aproto.MasterInfo``."""

    version: str = Field(description="The Determined version this master speaks.")
    master_id: str
    cluster_id: str
    cluster_name: str
    telemetry: Telemetry = Field(default_factory=Telemetry)
    sso_providers: list[SsoProviderInfo] = Field(default_factory=list)


class Product(StrEnum):
    """Which Determined offering a master is (``GetMasterResponse.Product``)."""

    UNSPECIFIED = "PRODUCT_UNSPECIFIED"
    COMMUNITY = "PRODUCT_COMMUNITY"


class SsoProvider(DetResource):
    name: str
    sso_url: str
    type: str
    always_redirect: bool = False


class GetMasterResponse(DetResource):
    """``GET /api/v1/master`` (``v1GetMasterResponse``)."""

    version: str
    master_id: str
    cluster_id: str
    cluster_name: str
    telemetry_enabled: bool = False
    has_custom_logo: bool = False
    external_login_uri: str | None = None
    external_logout_uri: str | None = None
    branding: str = "determined"
    rbac_enabled: bool = False
    strict_job_queue_control: bool = False
    product: Product = Product.UNSPECIFIED
    user_management_enabled: bool = True
    feature_switches: list[str] = Field(default_factory=list)
    sso_providers: list[SsoProvider] = Field(default_factory=list)
