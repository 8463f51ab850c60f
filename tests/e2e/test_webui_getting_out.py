"""Getting work out of the web UI and building on it, as a Determined user does in its WebUI:
the header says who is signed in; an experiment shows the config it runs with; a checkpoint
downloads and registers as a model version; the models page lists models however they were
made; an experiment forks, a trial continues or is killed; and a user who may not act on an
experiment is not offered its actions. The cluster and the signed-in page are the session's
(``conftest``)."""

from __future__ import annotations

import io
import re
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from playwright.sync_api import expect

from assay.client import Client
from assay.context import pack_context
from assay.errors import AssayError
from tests.e2e.conftest import shot
from tests.integration.cluster import CONTEXTS, Cluster, wait_for

COUNTER = CONTEXTS / "counter"

pytestmark = pytest.mark.integration


def counter_config(name: str, batches: int, step_seconds: float = 0.01) -> dict[str, Any]:
    return {
        "name": name,
        "entrypoint": "python3 train.py",
        "hyperparameters": {"step_seconds": step_seconds, "checkpoint_every": 5},
        "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": batches}},
    }


@pytest.fixture(scope="module")
def completed(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> int:
    """An experiment created from the CLI with two ``--config`` overrides, run to its end."""
    config = tmp_path_factory.mktemp("getting-out") / "const.yaml"
    config.write_text(yaml.safe_dump(counter_config("as-written", 400)))
    out = cluster.cli(
        "experiment", "create", str(config), str(COUNTER), "--json",
        "--config", "name=as-overridden", "--config", "searcher.max_length.batches=10",
        check=True,
    )  # fmt: skip
    exp_id = int(yaml.safe_load(out.stdout)["id"])
    cluster.wait_state(exp_id, "COMPLETED")
    return exp_id


def kept_checkpoint(cluster: Cluster, experiment_id: int) -> Any:
    """A checkpoint of the experiment its garbage collection kept."""
    return next(
        c for c in cluster.client.experiment_checkpoints(experiment_id) if c.state == "ACTIVE"
    )


@pytest.fixture
def other_user(cluster: Cluster, page: Any) -> Iterator[Any]:
    """A browser page signed in as a user who is not an admin."""
    name = f"viewer{len(cluster.client.users())}"
    cluster.add_user(name, "viewer-password")
    context = page.context.browser.new_context()
    try:
        tab = context.new_page()
        tab.set_default_timeout(30_000)
        tab.goto(f"{cluster.url}/sign-in")
        tab.get_by_label("User").fill(name)
        tab.get_by_label("Password").fill("viewer-password")
        tab.get_by_role("button", name="Sign in").click()
        tab.wait_for_url(re.compile(r"/experiments$"))
        tab.user_name = name
        yield tab
    finally:
        context.close()


def test_the_header_names_the_signed_in_user(cluster: Cluster, page: Any) -> None:
    page.goto(f"{cluster.url}/experiments")
    who = page.get_by_label("signed in as")
    who.wait_for()
    assert who.inner_text().split() == ["admin", "admin"]  # the name, then the admin tag


def test_the_config_shown_is_the_effective_one_and_the_written_one_is_a_tab_away(
    cluster: Cluster, completed: int, page: Any
) -> None:
    page.goto(f"{cluster.url}/experiments/{completed}")
    shown = page.get_by_label("effective config")
    shown.wait_for()
    effective = yaml.safe_load(shown.inner_text())
    assert effective == cluster.client.experiment(completed).config
    assert effective["name"] == "as-overridden"
    assert effective["searcher"]["max_length"] == {"batches": 10}
    shot(page, "experiment-config")
    page.get_by_role("tab", name="As submitted").click()
    written = yaml.safe_load(page.get_by_label("config as submitted").inner_text())
    assert written["name"] == "as-written"


def test_a_checkpoint_downloads_from_the_experiment_page_with_its_files(
    cluster: Cluster, completed: int, page: Any
) -> None:
    checkpoint = kept_checkpoint(cluster, completed)
    page.goto(f"{cluster.url}/experiments/{completed}")
    with page.expect_download() as download:
        page.get_by_role("link", name=f"download checkpoint {checkpoint.uuid}").click()
    data = Path(download.value.path()).read_bytes()
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        files = {m.name.removeprefix("./") for m in tar.getmembers() if m.isfile()}
    assert files == set(checkpoint.resources)


def test_a_checkpoint_registered_from_the_ui_is_a_version_the_models_page_lists(
    cluster: Cluster, completed: int, page: Any
) -> None:
    checkpoint = kept_checkpoint(cluster, completed)
    page.goto(f"{cluster.url}/trials/{checkpoint.trial_id}")
    page.get_by_role("button", name=f"register checkpoint {checkpoint.uuid}").click()
    dialog = page.get_by_role("dialog", name="Register checkpoint")
    dialog.get_by_label("Model (an existing one, or a new name)").fill("from-the-ui")
    dialog.get_by_label("Comment").fill("the best one")
    dialog.get_by_role("button", name="Register").click()
    dialog.get_by_role("status").filter(has_text="from-the-ui version 1").wait_for()
    [version] = cluster.client.model_versions("from-the-ui").versions
    assert (version.checkpoint.uuid, version.comment) == (checkpoint.uuid, "the best one")

    # A model made with the CLI is listed beside it, and its page offers its files.
    cluster.cli("model", "create", "from-the-cli", check=True)
    cluster.cli("model", "register-version", "from-the-cli", checkpoint.uuid, check=True)
    page.goto(f"{cluster.url}/models")
    table = page.get_by_role("table", name="models")
    table.get_by_role("link", name="from-the-ui").wait_for()
    shot(page, "models")
    table.get_by_role("link", name="from-the-cli").click()
    page.wait_for_url(re.compile(r"/models/from-the-cli$"))
    versions = page.get_by_role("table", name="versions")
    versions.get_by_text(checkpoint.uuid).wait_for()
    versions.get_by_role("link", name="download version 1").wait_for()
    shot(page, "model")


def derive_paused(page: Any, source: int, dialog_name: str, button: str, changes: str) -> int:
    """In the open Fork or Continue dialog: give ``changes``, create it paused, and return the
    new experiment's id from the page it goes to."""
    dialog = page.get_by_role("dialog", name=dialog_name)
    dialog.get_by_label(re.compile("^Config changes")).fill(changes)
    dialog.get_by_label("Create it paused").check()
    dialog.get_by_role("button", name=button).click()
    page.wait_for_url(lambda url: re.search(rf"/experiments/(?!{source}$)\d+$", url) is not None)
    return int(page.url.rsplit("/", 1)[1])


def test_fork_makes_a_new_experiment_with_the_changes_given(
    cluster: Cluster, completed: int, page: Any
) -> None:
    page.goto(f"{cluster.url}/experiments/{completed}")
    page.get_by_role("button", name="Fork").click()
    new_id = derive_paused(
        page, completed, f"Fork experiment {completed}", "Fork", "name=forked-in-the-ui\n"
    )
    forked = cluster.client.experiment(new_id)
    assert (forked.name, forked.state) == ("forked-in-the-ui", "PAUSED")
    assert forked.config["searcher"]["max_length"] == {"batches": 10}
    # Its page says where it came from, and links there.
    notes = page.get_by_role("list", name="notes")
    expect(notes).to_contain_text(f"forked from experiment {completed}")
    notes.get_by_role("link", name=f"experiment {completed}").click()
    page.wait_for_url(re.compile(rf"/experiments/{completed}$"))
    cluster.client.transition(new_id, "kill")


def test_a_trial_of_an_ended_experiment_continues_from_its_page(
    cluster: Cluster, completed: int, page: Any
) -> None:
    [trial] = cluster.client.trials(completed)
    page.goto(f"{cluster.url}/trials/{trial.id}")
    page.get_by_role("button", name="Continue trial").click()
    change = "searcher.max_length.batches=15"
    new_id = derive_paused(page, completed, f"Continue trial {trial.id}", "Continue", change)
    continued = cluster.client.experiment(new_id)
    assert continued.config["searcher"]["max_length"] == {"batches": 15}
    assert continued.state == "PAUSED"
    expect(page.get_by_role("list", name="notes")).to_contain_text(
        f"continues trial {trial.id} of experiment {completed}"
    )
    cluster.client.transition(new_id, "kill")


def test_a_running_trial_is_killed_from_its_page(cluster: Cluster, page: Any) -> None:
    exp_id = cluster.submit(yaml.safe_dump(counter_config("to-kill", 100000, 0.05)))
    trial = wait_for(
        "its trial to run",
        lambda: (ts := cluster.client.trials(exp_id)) and ts[0].state == "RUNNING" and ts[0],
    )
    page.goto(f"{cluster.url}/trials/{trial.id}")
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Kill trial").click()
    ended = cluster.wait_state(exp_id, "COMPLETED", "CANCELED", "ERROR")
    assert cluster.client.trials(exp_id)[0].state in ("CANCELED", "ERROR"), ended


def test_a_user_who_may_not_act_on_an_experiment_is_not_offered_its_actions(
    cluster: Cluster, completed: int, other_user: Any
) -> None:
    tab = other_user
    assert tab.get_by_label("signed in as").inner_text().strip() == tab.user_name
    tab.goto(f"{cluster.url}/experiments/{completed}")
    tab.get_by_label("effective config").wait_for()
    assert tab.get_by_role("button", name=f"archive experiment {completed}").count() == 0
    assert tab.get_by_role("button", name="Edit", exact=True).count() == 0
    assert tab.get_by_role("button", name="Delete", exact=True).count() == 0
    # Forking makes the user's own experiment: offered.
    assert tab.get_by_role("button", name="Fork").count() == 1
    [trial] = cluster.client.trials(completed)
    tab.goto(f"{cluster.url}/trials/{trial.id}")
    tab.get_by_role("heading", name=re.compile(f"Trial {trial.id}")).wait_for()
    # Continuing makes their own experiment: offered; the owner's Kill is not (it has ended
    # anyway), nor Edit or Delete on the experiment.
    tab.get_by_role("button", name="Continue trial").wait_for()
    # Their own experiment does show its actions.
    user = cluster.sign_in(tab.user_name, "viewer-password")
    own = user.create_experiment(
        yaml.safe_dump(counter_config("mine", 10)), pack_context(COUNTER).data, activate=False
    )
    tab.goto(f"{cluster.url}/experiments/{own.id}")
    tab.get_by_role("button", name=f"kill experiment {own.id}").wait_for()
    user.transition(own.id, "kill")


def test_a_failed_experiments_message_links_the_trial_that_failed(
    cluster: Cluster, page: Any
) -> None:
    config = counter_config("fails", 10)
    config["hyperparameters"]["fail_once_at"] = 2
    config["max_restarts"] = 0
    exp_id = cluster.submit(yaml.safe_dump(config))
    cluster.wait_state(exp_id, "ERROR")
    [trial] = cluster.client.trials(exp_id)
    page.goto(f"{cluster.url}/experiments/{exp_id}")
    page.get_by_role("link", name=f"on trial {trial.id}'s page").click()
    page.wait_for_url(re.compile(rf"/trials/{trial.id}$"))


def test_a_trials_log_marks_its_runs_and_shows_times_and_one_stream_when_asked(
    cluster: Cluster, completed: int, page: Any
) -> None:
    [trial] = cluster.client.trials(completed)
    entries = cluster.client.logs(trial.id)
    page.goto(f"{cluster.url}/trials/{trial.id}")
    logs = page.get_by_label("logs")
    page.wait_for_function(
        "el => el.textContent.includes('started at step')", arg=logs.element_handle()
    )
    first, *lines = logs.inner_text().splitlines()
    assert first.startswith("──── run 1 (allocation ")
    assert len(lines) == len(entries)
    page.get_by_label("Timestamps").click()  # kept in the URL: checked once it changes
    page.wait_for_url(re.compile(r"time=1"))
    stamped = logs.inner_text().splitlines()[1:]
    assert all(re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} ", line) for line in stamped)
    page.get_by_label("Stream").select_option("stdout")
    out = sum(1 for e in entries if e.stream == "stdout")
    page.wait_for_function(
        f"el => el.textContent.split('\\n').length === {out + 1}", arg=logs.element_handle()
    )


def test_the_account_page_makes_and_revokes_a_token_and_an_admin_adds_a_user(
    cluster: Cluster, page: Any
) -> None:
    page.goto(f"{cluster.url}/experiments")
    page.get_by_label("signed in as").click()
    page.wait_for_url(re.compile(r"/account$"))
    page.get_by_label("Description").fill("for a notebook script")
    page.get_by_role("button", name="Create token").click()
    token = page.get_by_label("new token").inner_text()
    made = Client(cluster.url, token=token)
    assert made.me().username == "admin"
    row = (
        page.get_by_role("table", name="tokens")
        .get_by_role("row")
        .filter(has_text="for a notebook script")
    )
    token_id = row.get_by_role("cell").first.inner_text()
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name=f"revoke token {token_id}").click()
    row.get_by_text("revoked").wait_for()
    with pytest.raises(AssayError):
        made.me()
    shot(page, "account")

    page.get_by_label("new user name").fill("added-in-the-ui")
    page.get_by_label("new user password").fill("a-password-of-theirs")
    page.get_by_role("button", name="Add user").click()
    page.get_by_role("table", name="users").get_by_text("added-in-the-ui").wait_for()
    assert cluster.sign_in("added-in-the-ui", "a-password-of-theirs").me().admin is False


def test_a_user_who_is_not_an_admin_sees_their_tokens_but_no_users(
    cluster: Cluster, other_user: Any
) -> None:
    tab = other_user
    tab.goto(f"{cluster.url}/account")
    tab.get_by_role("heading", name="Access tokens").wait_for()
    assert tab.get_by_role("heading", name="Users", exact=True).count() == 0


def test_edit_changes_a_running_experiments_name_labels_and_share_of_the_cluster(
    cluster: Cluster, page: Any
) -> None:
    exp_id = cluster.submit(yaml.safe_dump(counter_config("to-edit", 100000, 0.05)), activate=False)
    page.goto(f"{cluster.url}/experiments/{exp_id}")
    page.get_by_role("button", name="Edit", exact=True).click()
    dialog = page.get_by_role("dialog", name=f"Edit experiment {exp_id}")
    dialog.get_by_label("Name").fill("edited-in-the-ui")
    dialog.get_by_label("Labels, separated by commas").fill("a, b")
    dialog.get_by_label(re.compile("^Priority")).fill("7")
    dialog.get_by_label(re.compile("^Max slots")).fill("1")
    dialog.get_by_role("button", name="Save").click()
    page.get_by_role("heading", name=re.compile("edited-in-the-ui")).wait_for()
    edited = cluster.client.experiment(exp_id)
    assert (edited.name, edited.labels) == ("edited-in-the-ui", ["a", "b"])
    assert edited.config["resources"]["priority"] == 7
    assert edited.config["resources"]["max_slots"] == 1
    cluster.client.transition(exp_id, "kill")


def test_an_ended_experiment_is_deleted_after_saying_what_goes_with_it(
    cluster: Cluster, page: Any
) -> None:
    exp_id = cluster.submit(yaml.safe_dump(counter_config("to-delete", 10)), activate=False)
    cluster.client.transition(exp_id, "kill")
    cluster.wait_state(exp_id, "CANCELED", "COMPLETED", "ERROR")
    page.goto(f"{cluster.url}/experiments/{exp_id}")
    asked: list[str] = []

    def answer(dialog: Any) -> None:
        asked.append(dialog.message)
        dialog.accept()

    page.once("dialog", answer)
    page.get_by_role("button", name="Delete").click()
    page.wait_for_url(re.compile(r"/experiments$"))
    said = rf"Delete experiment {exp_id} with its \d+ trial\(s\) and \d+ checkpoint\(s\)"
    assert asked and re.match(said, asked[0]), asked
    with pytest.raises(AssayError):
        cluster.client.experiment(exp_id)
