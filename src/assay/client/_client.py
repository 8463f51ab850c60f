"""A typed client of the master's REST API, used by the CLI and by scripts."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from assay.client._http import DEFAULT_MASTER, HttpSession
from assay.client._upload import FilePart, MultipartBody, Progress, post_multipart


def master_url(explicit: str | None = None) -> str:
    """The master to talk to: ``explicit``, else ``$ASSAY_MASTER``, else the local default."""
    return explicit or os.environ.get("ASSAY_MASTER") or DEFAULT_MASTER


class Client:
    """Every method returns the master's JSON answer; errors raise ``assay.errors`` types."""

    def __init__(self, url: str | None = None, *, timeout: float = 30.0) -> None:
        self.http = HttpSession(master_url(url), timeout=timeout)

    @property
    def url(self) -> str:
        return self.http.base_url

    # -- cluster -------------------------------------------------------------------------------
    def info(self) -> dict[str, Any]:
        return dict(self.http.get("/api/v1/master"))

    def agents(self) -> list[dict[str, Any]]:
        return list(self.http.get("/api/v1/agents")["agents"])

    def resource_pools(self) -> list[dict[str, Any]]:
        return list(self.http.get("/api/v1/resource-pools")["resource_pools"])

    # -- experiments ---------------------------------------------------------------------------
    def create_experiment(
        self,
        config_text: str,
        context: bytes | Path,
        *,
        overrides: Sequence[str] = (),
        activate: bool = True,
        progress: Progress | None = None,
    ) -> dict[str, Any]:
        """Create an experiment from its config text and its context as a tar.gz (the bytes, or
        a file to stream from). The upload streams; ``progress`` is called with (bytes sent,
        bytes in all) as it goes."""
        fields = [
            ("config", config_text),
            *(("overrides", item) for item in overrides),
            ("activate", "true" if activate else "false"),
        ]
        body = MultipartBody(
            fields, FilePart("context", "context.tar.gz", "application/gzip", context)
        )
        answer = post_multipart(
            self.http.base_url,
            "/api/v1/experiments",
            body,
            token=self.http.token,
            timeout=300.0,
            progress=progress,
        )
        return dict(answer)

    def list_experiments(
        self,
        *,
        archived: bool = False,
        states: Sequence[str] = (),
        limit: int = 100,
        offset: int = 0,
    ) -> dict[str, Any]:
        params = {
            "archived": str(archived).lower(),
            "state": list(states),
            "limit": limit,
            "offset": offset,
        }
        return dict(self.http.get("/api/v1/experiments", params=params))

    def experiment(self, experiment_id: int) -> dict[str, Any]:
        return dict(self.http.get(f"/api/v1/experiments/{experiment_id}"))

    def trials(self, experiment_id: int) -> list[dict[str, Any]]:
        return list(self.http.get(f"/api/v1/experiments/{experiment_id}/trials")["trials"])

    def experiment_checkpoints(self, experiment_id: int) -> list[dict[str, Any]]:
        path = f"/api/v1/experiments/{experiment_id}/checkpoints"
        return list(self.http.get(path)["checkpoints"])

    def transition(self, experiment_id: int, action: str) -> dict[str, Any]:
        """``action``: pause, activate, cancel, kill, archive or unarchive."""
        return dict(self.http.post(f"/api/v1/experiments/{experiment_id}/{action}"))

    def wait(self, experiment_id: int, timeout: float = 30.0) -> str:
        answer = self.http.get(
            f"/api/v1/experiments/{experiment_id}/wait",
            params={"timeout": timeout},
            timeout=timeout + 30.0,
        )
        return str(answer["state"])

    def set_experiment(self, experiment_id: int, **resources: Any) -> dict[str, Any]:
        """Change ``priority``, ``weight`` or ``max_slots`` of an experiment."""
        return dict(
            self.http.request("PATCH", f"/api/v1/experiments/{experiment_id}", json_body=resources)
        )

    # -- job queue -----------------------------------------------------------------------------
    def jobs(self, resource_pool: str | None = None) -> dict[str, Any]:
        return dict(self.http.get("/api/v1/jobs", params={"resource_pool": resource_pool}))

    def update_job(self, job_id: str, **changes: Any) -> dict[str, Any]:
        return dict(self.http.request("PATCH", f"/api/v1/jobs/{job_id}", json_body=changes))

    def update_jobs(self, updates: Sequence[dict[str, Any]]) -> dict[str, Any]:
        """All-or-nothing: each update is ``{"job_id": ..., <field>: <value>}``."""
        return dict(self.http.post("/api/v1/jobs/update-batch", {"updates": list(updates)}))

    # -- trials --------------------------------------------------------------------------------
    def trial(self, trial_id: int) -> dict[str, Any]:
        return dict(self.http.get(f"/api/v1/trials/{trial_id}"))

    def metrics(self, trial_id: int, group: str | None = None) -> list[dict[str, Any]]:
        answer = self.http.get(f"/api/v1/trials/{trial_id}/metrics", params={"group": group})
        return list(answer["metrics"])

    def trial_checkpoints(self, trial_id: int) -> list[dict[str, Any]]:
        return list(self.http.get(f"/api/v1/trials/{trial_id}/checkpoints")["checkpoints"])

    def kill_trial(self, trial_id: int) -> dict[str, Any]:
        return dict(self.http.post(f"/api/v1/trials/{trial_id}/kill"))

    def logs(self, trial_id: int, *, after: int = 0, limit: int = 10_000) -> list[dict[str, Any]]:
        answer = self.http.get(
            f"/api/v1/trials/{trial_id}/logs", params={"after": after, "limit": limit}
        )
        return list(answer["logs"])

    def follow_logs(self, trial_id: int, *, after: int = 0) -> Iterator[dict[str, Any]]:
        """Log lines as they arrive, until the trial has ended."""
        for event, data in self.http.events(
            f"/api/v1/trials/{trial_id}/logs", params={"follow": "true", "after": after}
        ):
            if event == "log":
                yield dict(data)
            elif event == "end":
                return

    def checkpoint(self, uuid: str) -> dict[str, Any]:
        return dict(self.http.get(f"/api/v1/checkpoints/{uuid}"))

    def close(self) -> None:
        self.http.close()
