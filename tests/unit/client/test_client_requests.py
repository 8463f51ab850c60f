"""The client refuses a request it can tell is wrong before sending it, with an ``assay``
error saying what is wrong (not pydantic's): nothing answers at the URL it is given."""

from __future__ import annotations

import pytest

from assay import rest
from assay.client import Client
from assay.errors import InvalidRequest

NOWHERE = "http://127.0.0.1:9"


@pytest.mark.parametrize("username", ["", "   "])
def test_changing_a_user_without_a_name_is_refused_before_it_is_sent(username: str) -> None:
    # PATCH /api/v1/users/ is no user's path: the master redirects it, and the client read
    # the empty redirect as a user.
    with pytest.raises(InvalidRequest, match=r"^username: must not be empty$"):
        Client(NOWHERE, token="t").change_user(username, rest.UserChange(active=False))


def test_signing_in_with_a_name_or_password_no_master_takes_is_refused_in_one_line() -> None:
    client = Client(NOWHERE)
    with pytest.raises(InvalidRequest, match=r"^username: String should have at least 1 char"):
        client.login("", "a-password")
    with pytest.raises(InvalidRequest) as caught:
        client.login("alice", "p" * 5000)
    assert caught.value.message == "password: String should have at most 256 characters"
