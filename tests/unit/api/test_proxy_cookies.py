"""What the proxy passes back of a proxied app's answer: never a cookie of the master's, so the
app cannot put a session of its choosing in the user's browser."""

from __future__ import annotations

import pytest

from assay.api._proxy import _sets_masters_cookie


@pytest.mark.parametrize(
    "value",
    [
        b"assay_session=attackers-token; Path=/api/; HttpOnly",
        b"assay_proxy=x; Path=/proxy/3/",
        b" assay_session = x",
    ],
)
def test_a_proxied_app_cannot_set_a_cookie_of_the_masters(value: bytes) -> None:
    assert _sets_masters_cookie(b"Set-Cookie", value)


def test_a_proxied_apps_own_cookies_and_headers_pass() -> None:
    assert not _sets_masters_cookie(b"set-cookie", b"tensorboard_theme=dark; Path=/proxy/3/")
    assert not _sets_masters_cookie(b"content-type", b"assay_session=x")
