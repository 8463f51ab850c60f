"""A typed client of the master's REST API, used by the CLI and by scripts.

Importing it loads neither pydantic nor tarfile: an answer that is a ``rest.Answer`` is read
without pydantic, and a command that reads only those (``assay e list``) never loads it; the
models, and the checkpoint download, load when first used."""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay import rest
from assay.client._auth import USER_TOKEN_ENV, token_for
from assay.client._http import HttpSession, master_url
from assay.errors import InvalidRequest, MasterUnreachable

if TYPE_CHECKING:
    from typing import TypeVar

    from assay.client._download import Progress as DownloadProgress
    from assay.client._upload import Progress

    # Only for the checker: a TypeVar bound by name compiles the name when it is made.
    R = TypeVar("R", bound="rest.Request")


def request_body(model: type[R], **fields: Any) -> R:
    """The request ``model`` built from ``fields``; :class:`InvalidRequest` saying what is
    wrong with each field (on one line), rather than pydantic's error, when it cannot be."""
    from pydantic import ValidationError

    try:
        return model(**fields)
    except ValidationError as exc:
        problems = [
            f"{'.'.join(str(p) for p in err['loc']) or 'body'}: {err['msg']}"
            for err in exc.errors()
        ]
        raise InvalidRequest("; ".join(problems)) from None


def user_path(username: str) -> str:
    """The path of the user ``username``; an empty or blank name, which would name another
    route, is refused before anything is sent."""
    if not username.strip():
        raise InvalidRequest("username: must not be empty")
    return f"/api/v1/users/{urllib.parse.quote(username, safe='')}"


def model_path(name: str) -> str:
    """The path of the model ``name``; an empty or blank name, which would name the list of
    models, is refused before anything is sent."""
    if not name.strip():
        raise InvalidRequest("model name: must not be empty")
    return f"/api/v1/models/{urllib.parse.quote(name, safe='')}"


class Client:
    """Every method returns the master's answer as an ``assay.rest`` resource; errors raise
    ``assay.errors`` types.

    Requests carry ``token`` when given, else ``$ASSAY_USER_TOKEN``, else the token
    ``assay user login`` stored for this master."""

    def __init__(
        self, url: str | None = None, *, token: str | None = None, timeout: float = 30.0
    ) -> None:
        self.http = HttpSession(master_url(url), timeout=timeout)
        self.http.token = token or token_for(self.http.base_url)
        if not token and os.environ.get(USER_TOKEN_ENV):
            self.http.token_source = USER_TOKEN_ENV

    @property
    def url(self) -> str:
        return self.http.base_url

    # -- cluster -------------------------------------------------------------------------------
    def info(self) -> rest.MasterInfo:
        return rest.MasterInfo.model_validate(self.http.get("/api/v1/master"))

    def master_config(self) -> dict[str, Any]:
        """The master's effective settings, secrets masked (admins only)."""
        return rest.MasterConfigView.model_validate(self.http.get("/api/v1/master/config")).config

    def master_logs(self, *, after: int = 0) -> list[rest.MasterLogLine]:
        """The master's recent log lines after line ``after`` (admins only)."""
        answer = self.http.get("/api/v1/master/logs", params={"after": after})
        return rest.MasterLogPage.model_validate(answer).lines

    def master_backup(self, dest: str | Path) -> tuple[Path, str]:
        """A consistent copy of the cluster's database, saved to the file ``dest`` (or into the
        directory ``dest`` under the master's name for it); admins only. Returns the file and
        its format: ``sqlite`` or ``pg_dump``."""
        from assay.client._download import download_backup

        return download_backup(self.http, Path(dest))

    def agents(self) -> list[rest.Agent]:
        return rest.AgentList.model_validate(self.http.get("/api/v1/agents")).agents

    def resource_pools(self) -> list[rest.ResourcePool]:
        answer = self.http.get("/api/v1/resource-pools")
        return rest.ResourcePoolList.model_validate(answer).resource_pools

    def drain(self, wait_seconds: float = 0.0) -> rest.DrainStatus:
        """Stop the cluster's work for a shutdown: every running trial checkpoints and exits
        (admin, or the agent token). Waits up to ``wait_seconds`` for them."""
        body = rest.DrainRequest(wait_seconds=wait_seconds).model_dump()
        answer = self.http.post("/api/v1/master/drain", body, timeout=wait_seconds + 30.0)
        return rest.DrainStatus.model_validate(answer)

    # -- experiments ---------------------------------------------------------------------------
    def create_experiment(
        self,
        config_text: str,
        context: bytes | Path,
        *,
        overrides: Sequence[str] = (),
        activate: bool = True,
        progress: Progress | None = None,
        notes: Sequence[str] = (),
        original_config: str = "",
    ) -> rest.Experiment:
        """Create an experiment from its config text and its context as a tar.gz (the bytes, or
        a file to stream from). The upload streams; ``progress`` is called with (bytes sent,
        bytes in all) as it goes. ``notes`` are stored as the first lines of the experiment's
        log. ``original_config``: the config as written when ``config_text`` translates it (an
        NNI config), shown as the experiment's config."""
        from assay.client._upload import FilePart, MultipartBody, post_multipart

        fields = [
            ("config", config_text),
            *(("overrides", item) for item in overrides),
            *(("notes", item) for item in notes),
            ("activate", "true" if activate else "false"),
            *((("original_config", original_config),) if original_config else ()),
        ]
        body = MultipartBody(
            fields, FilePart("context", "context.tar.gz", "application/gzip", context)
        )
        answer = post_multipart(
            self.http, "/api/v1/experiments", body, timeout=300.0, progress=progress
        )
        return rest.read_answer(rest.Experiment, answer)

    def list_experiments(
        self,
        *,
        archived: bool = False,
        states: Sequence[str] = (),
        user: str | None = None,
        name: str | None = None,
        label: str | None = None,
        sort: rest.ExperimentSort = rest.ExperimentSort.ID,
        order: rest.SortOrder = rest.SortOrder.DESC,
        limit: int = 100,
        offset: int = 0,
    ) -> rest.ExperimentList:
        params = {
            "archived": str(archived).lower(),
            "state": list(states),
            "user": user,
            "name": name,
            "label": label,
            "sort": sort.value,
            "order": order.value,
            "limit": limit,
            "offset": offset,
        }
        answer = self.http.get("/api/v1/experiments", params=params)
        return rest.read_answer(rest.ExperimentList, answer)

    def experiment(self, experiment_id: int) -> rest.Experiment:
        answer = self.http.get(f"/api/v1/experiments/{experiment_id}")
        return rest.read_answer(rest.Experiment, answer)

    def trials(self, experiment_id: int) -> list[rest.Trial]:
        answer = self.http.get(f"/api/v1/experiments/{experiment_id}/trials")
        return rest.TrialList.model_validate(answer).trials

    def trial_page(
        self,
        experiment_id: int,
        *,
        states: Sequence[str] = (),
        sort: rest.TrialSort = rest.TrialSort.ID,
        order: rest.SortOrder = rest.SortOrder.ASC,
        limit: int | None = None,
        offset: int = 0,
    ) -> rest.TrialList:
        """A page of the experiment's trials in the order asked for, with the total."""
        params = {
            "state": list(states),
            "sort": sort.value,
            "order": order.value,
            "limit": limit,
            "offset": offset,
        }
        answer = self.http.get(f"/api/v1/experiments/{experiment_id}/trials", params=params)
        return rest.TrialList.model_validate(answer)

    def experiment_checkpoints(self, experiment_id: int) -> list[rest.Checkpoint]:
        answer = self.http.get(f"/api/v1/experiments/{experiment_id}/checkpoints")
        return rest.CheckpointList.model_validate(answer).checkpoints

    def searcher_progress(self, experiment_id: int) -> rest.SearcherProgress:
        answer = self.http.get(f"/api/v1/experiments/{experiment_id}/searcher-progress")
        return rest.SearcherProgress.model_validate(answer)

    def hparam_importance(
        self, experiment_id: int, evaluator: rest.ImportanceEvaluator | None = None
    ) -> rest.HparamImportance:
        params = {} if evaluator is None else {"evaluator": evaluator.value}
        answer = self.http.get(
            f"/api/v1/experiments/{experiment_id}/hparam-importance", params=params
        )
        return rest.HparamImportance.model_validate(answer)

    def transition(self, experiment_id: int, action: str) -> rest.ExperimentSummary:
        """``action``: pause, activate, cancel, kill, archive or unarchive."""
        answer = self.http.post(f"/api/v1/experiments/{experiment_id}/{action}")
        return rest.read_answer(rest.ExperimentSummary, answer)

    def wait(self, experiment_id: int, timeout: float = 30.0) -> rest.ExperimentState:
        """The experiment's state once it has ended, or when ``timeout`` seconds have passed."""
        answer = self.http.get(
            f"/api/v1/experiments/{experiment_id}/wait",
            params={"timeout": timeout},
            timeout=timeout + 30.0,
        )
        return rest.read_answer(rest.ExperimentStateAnswer, answer).state

    def set_experiment(
        self, experiment_id: int, change: rest.ExperimentResources
    ) -> rest.Experiment:
        """Change the experiment's priority, weight or max slots (the fields ``change`` sets);
        the experiment as changed."""
        answer = self.http.request(
            "PATCH",
            f"/api/v1/experiments/{experiment_id}",
            json_body=change.model_dump(exclude_unset=True),
        )
        return rest.read_answer(rest.Experiment, answer)

    def fork_experiment(
        self, experiment_id: int, *, overrides: Sequence[str] = (), activate: bool = True
    ) -> rest.Experiment:
        """A new experiment with the experiment's config (``overrides`` applied) and context."""
        body = request_body(rest.ExperimentFork, overrides=list(overrides), activate=activate)
        answer = self.http.post(f"/api/v1/experiments/{experiment_id}/fork", body.model_dump())
        return rest.read_answer(rest.Experiment, answer)

    def continue_experiment(
        self,
        experiment_id: int,
        *,
        trial_id: int | None = None,
        overrides: Sequence[str] = (),
        activate: bool = True,
    ) -> rest.Experiment:
        """A new experiment training a trial of the ended experiment further (its only one, or
        ``trial_id``) from its latest checkpoint."""
        body = request_body(
            rest.ExperimentContinue,
            trial_id=trial_id,
            overrides=list(overrides),
            activate=activate,
        )
        answer = self.http.post(f"/api/v1/experiments/{experiment_id}/continue", body.model_dump())
        return rest.read_answer(rest.Experiment, answer)

    def delete_experiment(
        self, experiment_id: int, *, dry_run: bool = False
    ) -> rest.ExperimentDeleted:
        """Delete an ended experiment: its checkpoint files, then its rows (with ``dry_run``,
        only the refusals, and what would be deleted)."""
        answer = self.http.request(
            "DELETE",
            f"/api/v1/experiments/{experiment_id}",
            params={"dry_run": "true"} if dry_run else None,
            timeout=300.0,
        )
        return rest.read_answer(rest.ExperimentDeleted, answer)

    def collect_checkpoints(self, experiment_id: int, policy: rest.GcPolicy) -> rest.GcResult:
        """Run a garbage-collection policy on the experiment (or, with ``dry_run``, say what
        it would delete)."""
        answer = self.http.post(
            f"/api/v1/experiments/{experiment_id}/gc",
            policy.model_dump(exclude_none=True),
            timeout=300.0,
        )
        return rest.GcResult.model_validate(answer)

    # -- jobs that are not experiments ----------------------------------------------------------
    def submit_job(
        self,
        config_text: str,
        *,
        kind: str = "job",
        context: bytes | Path | None = None,
        overrides: Sequence[str] = (),
        progress: Progress | None = None,
    ) -> rest.Task:
        """Submit an OpenPAI job (``kind`` job: the format is read from its keys), a Determined
        command config (``command``) or generic-task config (``generic``), with an optional
        context tar.gz its instances start in."""
        from assay.client._upload import FilePart, MultipartBody, post_multipart

        fields = [("config", config_text), ("kind", kind)]
        fields += [("overrides", item) for item in overrides]
        file = (
            None
            if context is None
            else FilePart("context", "context.tar.gz", "application/gzip", context)
        )
        answer = post_multipart(
            self.http,
            "/api/v1/jobs",
            MultipartBody(fields, file),
            timeout=300.0,
            progress=progress,
        )
        return rest.Task.model_validate(answer)

    def start_notebook(
        self,
        config_text: str = "",
        *,
        context: bytes | Path | None = None,
        overrides: Sequence[str] = (),
        progress: Progress | None = None,
    ) -> rest.Notebook:
        """Start JupyterLab from a Determined notebook config (empty: every default), in an
        optional context tar.gz."""
        answer = self._start("/api/v1/notebooks", config_text, context, overrides, progress)
        return rest.Notebook.model_validate(answer)

    def start_shell(
        self,
        config_text: str = "",
        *,
        context: bytes | Path | None = None,
        overrides: Sequence[str] = (),
        progress: Progress | None = None,
    ) -> rest.Shell:
        """Start sshd from a Determined shell config (empty: every default), in an optional
        context tar.gz."""
        answer = self._start("/api/v1/shells", config_text, context, overrides, progress)
        return rest.Shell.model_validate(answer)

    def _start(
        self,
        path: str,
        config_text: str,
        context: bytes | Path | None,
        overrides: Sequence[str],
        progress: Progress | None,
    ) -> Any:
        from assay.client._upload import FilePart, MultipartBody, post_multipart

        fields = [("config", config_text)] + [("overrides", item) for item in overrides]
        file = (
            None
            if context is None
            else FilePart("context", "context.tar.gz", "application/gzip", context)
        )
        body = MultipartBody(fields, file)
        return post_multipart(self.http, path, body, timeout=300.0, progress=progress)

    def shells(self, *, all_: bool = False) -> list[rest.Shell]:
        answer = self.http.get("/api/v1/shells", params={"all": "true" if all_ else None})
        return rest.ShellList.model_validate(answer).shells

    def shell(self, shell_id: int) -> rest.Shell:
        return rest.Shell.model_validate(self.http.get(f"/api/v1/shells/{shell_id}"))

    def kill_shell(self, shell_id: int) -> rest.Shell:
        return rest.Shell.model_validate(self.http.post(f"/api/v1/shells/{shell_id}/kill"))

    def shell_key(self, shell_id: int) -> rest.ShellKey:
        return rest.ShellKey.model_validate(self.http.get(f"/api/v1/shells/{shell_id}/key"))

    def tunnel(self, shell_id: int) -> Any:
        """A WebSocket to shell ``shell_id``'s sshd (``websockets``' sync connection)."""
        from assay.client._tunnel import open_tunnel

        return open_tunnel(self.url, self.http.token, f"/api/v1/shells/{shell_id}/tunnel")

    def notebooks(self, *, all_: bool = False) -> list[rest.Notebook]:
        params = {"all": "true" if all_ else None}
        answer = self.http.get("/api/v1/notebooks", params=params)
        return rest.NotebookList.model_validate(answer).notebooks

    def notebook(self, notebook_id: int) -> rest.Notebook:
        return rest.Notebook.model_validate(self.http.get(f"/api/v1/notebooks/{notebook_id}"))

    def kill_notebook(self, notebook_id: int) -> rest.Notebook:
        answer = self.http.post(f"/api/v1/notebooks/{notebook_id}/kill")
        return rest.Notebook.model_validate(answer)

    def tasks(self, *, user: str | None = None, active: bool = False) -> list[rest.TaskSummary]:
        params = {"user": user, "active": "true" if active else None}
        return rest.TaskList.model_validate(self.http.get("/api/v1/tasks", params=params)).tasks

    def task(self, task_id: int) -> rest.Task:
        return rest.Task.model_validate(self.http.get(f"/api/v1/tasks/{task_id}"))

    def stop_task(self, task_id: int) -> rest.Task:
        return rest.Task.model_validate(self.http.post(f"/api/v1/tasks/{task_id}/stop"))

    def resubmit_task(self, task_id: int, name: str | None = None) -> rest.Task:
        """Job ``task_id`` submitted again as it was (config, secrets, code), as a new job."""
        body = rest.TaskResubmit(name=name).model_dump(mode="json", exclude_none=True)
        return rest.Task.model_validate(self.http.post(f"/api/v1/tasks/{task_id}/resubmit", body))

    def start_tensorboard(
        self, experiment_id: int, trial_ids: list[int] | None = None
    ) -> rest.TensorBoard:
        body = rest.TensorBoardRequest(experiment_id=experiment_id, trial_ids=trial_ids or [])
        answer = self.http.post("/api/v1/tensorboards", body.model_dump(mode="json"))
        return rest.TensorBoard.model_validate(answer)

    def tensorboards(self, *, all_: bool = False) -> list[rest.TensorBoard]:
        params = {"all": "true" if all_ else None}
        answer = self.http.get("/api/v1/tensorboards", params=params)
        return rest.TensorBoardList.model_validate(answer).tensorboards

    def tensorboard(self, tensorboard_id: int) -> rest.TensorBoard:
        return rest.TensorBoard.model_validate(
            self.http.get(f"/api/v1/tensorboards/{tensorboard_id}")
        )

    def kill_tensorboard(self, tensorboard_id: int) -> rest.TensorBoard:
        answer = self.http.post(f"/api/v1/tensorboards/{tensorboard_id}/kill")
        return rest.TensorBoard.model_validate(answer)

    def task_logs(
        self,
        task_id: int,
        *,
        role: str | None = None,
        index: int | None = None,
        after: int = 0,
        limit: int = 10_000,
    ) -> list[rest.TaskLogEntry]:
        params = {"role": role, "index": index, "after": after, "limit": limit}
        answer = self.http.get(f"/api/v1/tasks/{task_id}/logs", params=params)
        return rest.TaskLogPage.model_validate(answer).logs

    def follow_task_logs(
        self, task_id: int, *, role: str | None = None, index: int | None = None, after: int = 0
    ) -> Iterator[rest.TaskLogEntry]:
        """The job's lines as they arrive, until it and its processes have ended (as
        :meth:`follow_logs`)."""
        params = {"follow": "true", "after": after, "role": role, "index": index}
        for event, data in self.http.events(f"/api/v1/tasks/{task_id}/logs", params=params):
            if event == "log":
                yield rest.TaskLogEntry.model_validate(data)
            elif event == "end":
                return
        raise _stream_cut(self.url)

    # -- job queue -----------------------------------------------------------------------------
    def jobs(self, resource_pool: str | None = None) -> rest.JobQueue:
        answer = self.http.get("/api/v1/jobs", params={"resource_pool": resource_pool})
        return rest.JobQueue.model_validate(answer)

    def update_job(self, job_id: str, change: rest.JobChange) -> rest.JobsUpdated:
        answer = self.http.request(
            "PATCH", f"/api/v1/jobs/{job_id}", json_body=change.model_dump(exclude_none=True)
        )
        return rest.JobsUpdated.model_validate(answer)

    def update_jobs(self, updates: Sequence[rest.BatchChange]) -> rest.JobsUpdated:
        """All or nothing: every change is applied, or none is and the error lists why."""
        body = request_body(rest.JobBatch, updates=list(updates)).model_dump(exclude_none=True)
        return rest.JobsUpdated.model_validate(self.http.post("/api/v1/jobs/update-batch", body))

    # -- trials --------------------------------------------------------------------------------
    def trial(self, trial_id: int) -> rest.TrialDetail:
        return rest.TrialDetail.model_validate(self.http.get(f"/api/v1/trials/{trial_id}"))

    def metrics(self, trial_id: int, group: str | None = None) -> list[rest.Metric]:
        answer = self.http.get(f"/api/v1/trials/{trial_id}/metrics", params={"group": group})
        return rest.MetricList.model_validate(answer).metrics

    def trial_checkpoints(self, trial_id: int) -> list[rest.Checkpoint]:
        answer = self.http.get(f"/api/v1/trials/{trial_id}/checkpoints")
        return rest.CheckpointList.model_validate(answer).checkpoints

    def kill_trial(self, trial_id: int) -> rest.Trial:
        return rest.Trial.model_validate(self.http.post(f"/api/v1/trials/{trial_id}/kill"))

    def notes(self, experiment_id: int, *, after: int = 0) -> list[rest.ExperimentNote]:
        """The experiment's own log lines after note ``after``, oldest first."""
        answer = self.http.get(
            f"/api/v1/experiments/{experiment_id}/notes", params={"after": after}
        )
        return rest.read_answer(rest.ExperimentNoteList, answer).notes

    def logs(self, trial_id: int, *, after: int = 0, limit: int = 10_000) -> list[rest.LogEntry]:
        answer = self.http.get(
            f"/api/v1/trials/{trial_id}/logs", params={"after": after, "limit": limit}
        )
        return rest.LogPage.model_validate(answer).logs

    def follow_logs(self, trial_id: int, *, after: int = 0) -> Iterator[rest.LogEntry]:
        """Log lines as they arrive, until the trial has ended; :class:`MasterUnreachable` when
        the stream ends before (the master went away): ``after`` the last line takes it up."""
        for event, data in self.http.events(
            f"/api/v1/trials/{trial_id}/logs", params={"follow": "true", "after": after}
        ):
            if event == "log":
                yield rest.LogEntry.model_validate(data)
            elif event == "end":
                return
        raise _stream_cut(self.url)

    def checkpoint(self, uuid: str) -> rest.Checkpoint:
        from assay.client._download import files_path

        return rest.Checkpoint.model_validate(self.http.get(files_path(uuid)))

    def download_checkpoint(
        self,
        uuid: str,
        dest: str | Path,
        *,
        path: str | None = None,
        progress: DownloadProgress | None = None,
    ) -> Path:
        """Download checkpoint ``uuid`` through the master into the directory ``dest``
        (created if missing), or only its file or directory ``path``; sizes are checked
        against the checkpoint's listing and nothing is written unless all of it arrived.
        ``progress`` is called with (bytes received, bytes expected)."""
        from assay.client._download import download_checkpoint

        return download_checkpoint(self.http, uuid, dest, path=path, progress=progress)

    def delete_checkpoints(
        self, uuids: Sequence[str], *, dry_run: bool = False
    ) -> rest.CheckpointsDeleted:
        """Delete checkpoints: files first, then rows; ``failed`` names those whose files
        could not be deleted (kept as they were). With ``dry_run``, only the refusals."""
        body = request_body(rest.CheckpointDelete, uuids=list(uuids), dry_run=dry_run)
        answer = self.http.post("/api/v1/checkpoints/delete", body.model_dump(), timeout=300.0)
        return rest.CheckpointsDeleted.model_validate(answer)

    # -- the model registry ---------------------------------------------------------------------
    def create_model(
        self, name: str, *, description: str = "", labels: Sequence[str] = ()
    ) -> rest.Model:
        body = request_body(
            rest.ModelCreate, name=name, description=description, labels=list(labels)
        )
        return rest.Model.model_validate(self.http.post("/api/v1/models", body.model_dump()))

    def models(
        self, *, name: str | None = None, limit: int = 100, offset: int = 0
    ) -> rest.ModelList:
        """The models whose name contains ``name`` (any case), by name, a page at a time."""
        params = {"name": name, "limit": limit, "offset": offset}
        return rest.ModelList.model_validate(self.http.get("/api/v1/models", params=params))

    def model(self, name: str) -> rest.Model:
        return rest.Model.model_validate(self.http.get(model_path(name)))

    def change_model(self, name: str, change: rest.ModelChange) -> rest.Model:
        answer = self.http.request(
            "PATCH", model_path(name), json_body=change.model_dump(exclude_none=True)
        )
        return rest.Model.model_validate(answer)

    def delete_model(self, name: str) -> rest.ModelDeleted:
        """Delete the model and its versions; their checkpoints stay."""
        return rest.ModelDeleted.model_validate(self.http.request("DELETE", model_path(name)))

    def register_version(
        self, name: str, checkpoint_uuid: str, *, version_name: str = "", comment: str = ""
    ) -> rest.ModelVersion:
        """Register the checkpoint as the model's next version."""
        body = request_body(
            rest.ModelVersionCreate,
            checkpoint_uuid=checkpoint_uuid,
            name=version_name,
            comment=comment,
        )
        answer = self.http.post(f"{model_path(name)}/versions", body.model_dump())
        return rest.ModelVersion.model_validate(answer)

    def model_versions(self, name: str) -> rest.ModelVersionList:
        """The model and its versions, oldest first."""
        answer = self.http.get(f"{model_path(name)}/versions")
        return rest.ModelVersionList.model_validate(answer)

    def model_version(self, name: str, number: int) -> rest.ModelVersion:
        answer = self.http.get(f"{model_path(name)}/versions/{number}")
        return rest.ModelVersion.model_validate(answer)

    def delete_model_version(self, name: str, number: int) -> rest.ModelVersion:
        """Delete the version (its checkpoint stays); the version as it was."""
        answer = self.http.request("DELETE", f"{model_path(name)}/versions/{number}")
        return rest.ModelVersion.model_validate(answer)

    # -- users and tokens ----------------------------------------------------------------------
    def login(self, username: str, password: str) -> rest.Session:
        """Sign in; later requests of this client carry the new session's token."""
        body = request_body(rest.Login, username=username, password=password).model_dump()
        answer = self.http.post("/api/v1/auth/login", body, signed=False)
        session = rest.Session.model_validate(answer)
        self.http.token = session.token
        self.http.token_source = None
        return session

    def one_time_token(self) -> rest.OneTimeToken:
        """A one-time sign-in token of the signed-in user, for a browser link (only a browser
        exchanges it: the session it gives is a cookie the browser keeps)."""
        answer = self.http.post("/api/v1/auth/one-time-tokens")
        return rest.OneTimeToken.model_validate(answer)

    def logout(self) -> None:
        self.http.post("/api/v1/auth/logout")

    def me(self) -> rest.User:
        return rest.User.model_validate(self.http.get("/api/v1/me"))

    def users(self) -> list[rest.User]:
        return rest.UserList.model_validate(self.http.get("/api/v1/users")).users

    def create_user(self, user: rest.UserCreate) -> rest.User:
        return rest.User.model_validate(self.http.post("/api/v1/users", user.model_dump()))

    def change_user(self, username: str, change: rest.UserChange) -> rest.User:
        answer = self.http.request(
            "PATCH", user_path(username), json_body=change.model_dump(exclude_none=True)
        )
        return rest.User.model_validate(answer)

    def create_token(self, request: rest.TokenCreate) -> rest.NewAccessToken:
        answer = self.http.post("/api/v1/tokens", request.model_dump(exclude_none=True))
        return rest.NewAccessToken.model_validate(answer)

    def tokens(self, *, all_users: bool = False, kind: str = "access") -> list[rest.AccessToken]:
        params = {"all_users": str(all_users).lower(), "kind": kind}
        answer = self.http.get("/api/v1/tokens", params=params)
        return rest.AccessTokenList.model_validate(answer).tokens

    def revoke_token(self, token_id: int) -> rest.AccessToken:
        answer = self.http.request("DELETE", f"/api/v1/tokens/{token_id}")
        return rest.AccessToken.model_validate(answer)

    def close(self) -> None:
        self.http.close()


def _stream_cut(url: str) -> MasterUnreachable:
    # A master that shuts down closes its streams without the "end" event.
    return MasterUnreachable(f"the master at {url} closed the log stream before its end")
