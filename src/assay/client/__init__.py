"""Talking to the master over HTTP. Never imports server code."""

from __future__ import annotations

from assay.client._client import Client, master_url
from assay.client._http import DEFAULT_MASTER, HttpSession

__all__ = ["DEFAULT_MASTER", "Client", "HttpSession", "master_url"]
