"""Users on a real master and database: what deactivating one does to their tokens."""

from __future__ import annotations

import pytest

from assay import rest
from assay.errors import Unauthorized
from assay.master import Master
from tests.unit.master.support import run

PASSWORD = "password-of-a-user"


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_deactivating_a_user_ends_their_sessions_and_tokens_for_good(master: Master) -> None:
    run(master.users.ensure_admin("password-of-the-admin"))
    admin = run(
        master.users.authenticate(run(master.users.login("admin", "password-of-the-admin")).token)
    )
    run(master.users.create(admin, rest.UserCreate(username="dave", password=PASSWORD)))
    session = run(master.users.login("dave", PASSWORD)).token
    dave = run(master.users.authenticate(session))
    access = run(master.users.create_token(dave, rest.TokenCreate(description="ci"))).token

    run(master.users.change(admin, "dave", rest.UserChange(active=False)))
    run(master.users.change(admin, "dave", rest.UserChange(active=True)))

    # Activated again, dave signs in anew; what was signed in before stays out.
    for token in (session, access):
        with pytest.raises(Unauthorized):
            run(master.users.authenticate(token))
    again = run(master.users.login("dave", PASSWORD)).token
    assert run(master.users.authenticate(again)).username == "dave"
    listed = run(master.users.tokens(admin, everyone=True, kind=None)).tokens
    assert [t.revoked_at is not None for t in listed if t.username == "dave"] == [
        False,  # the new sign-in
        True,  # the access token
        True,  # the first sign-in
    ]
