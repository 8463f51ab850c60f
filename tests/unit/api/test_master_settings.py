"""The master's protection settings: allowed hosts and origins, TLS files, and the flags that
give them, checked before anything is opened or bound."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

import pytest

from assay.api.__main__ import _with_flags, main
from assay.api._server import _warn_about_exposure, check_tls
from assay.config import MasterConfig, load_master_config
from assay.errors import InvalidConfig
from tests.unit.api.certs import encrypted_copy, make_server_cert


def config_from(tmp_path: Path, text: str) -> MasterConfig:
    path = tmp_path / "master.yaml"
    path.write_text(text)
    return load_master_config(path)


def flags(*argv: str) -> argparse.Namespace:
    namespace = argparse.Namespace(
        host=None, port=None, db=None, tls_cert=None, tls_key=None, allowed_host=[]
    )
    parser = argparse.ArgumentParser()
    parser.add_argument("--tls-cert", type=Path)
    parser.add_argument("--tls-key", type=Path)
    parser.add_argument("--allowed-host", action="append", default=[])
    return parser.parse_args(argv, namespace)


def test_hosts_and_origins_are_kept_in_the_form_requests_are_compared_in(tmp_path: Path) -> None:
    config = config_from(
        tmp_path,
        "allowed_hosts: [Master.Example, '::1', '[FE80::1]', '*.corp.example', '*']\n"
        "allowed_origins: ['HTTPS://UI.example:8443/', 'http://[::1]:80', 'http://ui.example']\n",
    )
    assert config.allowed_hosts == [
        "master.example",
        "[::1]",
        "[fe80::1]",
        "*.corp.example",
        "*",
    ]
    assert config.allowed_origins == [
        "https://ui.example:8443",
        "http://[::1]:80",
        "http://ui.example",
    ]


def test_the_defaults_answer_only_loopback_names_and_serve_plain_http() -> None:
    config = MasterConfig()
    assert (config.host, config.tls, config.allowed_hosts, config.allowed_origins) == (
        "127.0.0.1",
        None,
        [],
        [],
    )


def test_every_bad_host_and_origin_is_named(tmp_path: Path) -> None:
    with pytest.raises(InvalidConfig) as caught:
        config_from(
            tmp_path,
            "allowed_hosts: ['master.example:8080', 'a.*.example', '*example', '', 'http://x',"
            " '*.']\n"
            "allowed_origins: ['null', 'ui.example', 'ftp://ui.example', 'https://ui.example/app',"
            " 'https://ui.example:99999', 'https://user@ui.example', '*']\n",
        )
    problems = {d.path: d.message for d in caught.value.details}
    assert "without a port" in problems["allowed_hosts[0]"]
    assert "wildcard" in problems["allowed_hosts[1]"]
    assert "wildcard" in problems["allowed_hosts[2]"]
    assert "host name or address" in problems["allowed_hosts[3]"]
    assert "host name or address" in problems["allowed_hosts[4]"]
    assert "wildcard" in problems["allowed_hosts[5]"]
    for i in range(7):
        assert "scheme://host[:port]" in problems[f"allowed_origins[{i}]"]
    assert len(problems) == 13


def test_tls_needs_both_files_in_the_config(tmp_path: Path) -> None:
    with pytest.raises(InvalidConfig) as caught:
        config_from(tmp_path, "tls: {cert: /etc/master.pem}\n")
    assert [d.path for d in caught.value.details] == ["tls.key"]


def test_a_certificate_flag_without_its_key_is_refused() -> None:
    with pytest.raises(InvalidConfig, match="--tls-cert needs --tls-key too"):
        _with_flags(MasterConfig(), flags("--tls-cert", "c.pem"))
    with pytest.raises(InvalidConfig, match="--tls-key needs --tls-cert too"):
        _with_flags(MasterConfig(), flags("--tls-key", "k.pem"))


def test_flags_give_tls_and_add_allowed_hosts_to_the_configs() -> None:
    config = MasterConfig(allowed_hosts=["from-config.example"])
    changed = _with_flags(
        config,
        flags("--tls-cert", "c.pem", "--tls-key", "k.pem", "--allowed-host", "Flag.Example"),
    )
    assert changed.tls is not None
    assert (changed.tls.cert, changed.tls.key) == (Path("c.pem"), Path("k.pem"))
    assert changed.allowed_hosts == ["from-config.example", "flag.example"]


def test_a_bad_allowed_host_flag_is_refused_like_the_config_key() -> None:
    with pytest.raises(InvalidConfig) as caught:
        _with_flags(MasterConfig(), flags("--allowed-host", "master.example:8080"))
    assert "command-line flags" in caught.value.message
    assert "without a port" in str(caught.value)


def test_unusable_tls_files_stop_the_master_before_it_opens_anything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    missing = tmp_path / "missing.pem"
    code = main(
        ["--home", str(home), "--port", "1", "--tls-cert", str(missing), "--tls-key", str(missing)]
    )
    assert code == 1
    err = capsys.readouterr().err
    assert err == f"error: cannot read the TLS certificate {missing}: No such file or directory\n"
    assert not home.exists()


def test_a_good_certificate_and_key_are_accepted(tmp_path: Path) -> None:
    made = make_server_cert(tmp_path)
    check_tls(made.cert, made.key)


def test_tls_files_that_cannot_serve_are_named(tmp_path: Path) -> None:
    made = make_server_cert(tmp_path)
    unreadable = tmp_path / "unreadable.key"
    unreadable.write_bytes(made.key.read_bytes())
    unreadable.chmod(0)
    cases = [
        (made.cert, tmp_path / "nope.key", "cannot read the TLS key"),
        (made.key, made.key, "is not a PEM certificate file"),
        (made.cert, made.cert, "is not a PEM key file"),
        (made.cert, tmp_path / "ca.key", "key values mismatch"),
        (made.cert, encrypted_copy(made.key, tmp_path / "enc.key"), "the key is encrypted"),
    ]
    try:
        unreadable.read_bytes()
    except PermissionError:
        cases.append((made.cert, unreadable, "Permission denied"))
    for cert, key, says in cases:
        with pytest.raises(InvalidConfig) as caught:
            check_tls(cert, key)
        assert says in str(caught.value)
        assert "\n" not in str(caught.value)


def test_listening_beyond_loopback_without_tls_warns_that_tokens_travel_in_clear(
    caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    caplog.set_level(logging.WARNING, logger="assay.master")
    _warn_about_exposure(MasterConfig(host="10.0.0.5"))
    assert "without TLS" in caplog.text and "clear text" in caplog.text
    caplog.clear()
    _warn_about_exposure(MasterConfig(host="0.0.0.0", allowed_hosts=["master.example"]))
    assert "clear text" in caplog.text and "every address" not in caplog.text
    caplog.clear()
    _warn_about_exposure(MasterConfig(host="::"))
    assert "answers only requests addressed to 127.0.0.1, localhost, [::1]" in caplog.text
    caplog.clear()
    tls = {"cert": tmp_path / "c.pem", "key": tmp_path / "k.pem"}
    _warn_about_exposure(MasterConfig.model_validate({"host": "10.0.0.5", "tls": tls}))
    _warn_about_exposure(MasterConfig(host="127.0.0.1"))
    _warn_about_exposure(MasterConfig(host="localhost"))
    assert caplog.text == ""
