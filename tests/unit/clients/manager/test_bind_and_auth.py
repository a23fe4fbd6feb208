"""Where the console may listen, and its HTTP basic auth."""

from __future__ import annotations

import base64
import socket
from pathlib import Path

import pytest

from broker.cli.main import main
from clients.manager.auth import credentials_match, read_password_file
from clients.manager.bind import ManagerConfigError, check_bind, is_loopback, parse_listen
from clients.manager.server import open_listener


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "localhost"])
def test_loopback_addresses_need_no_password(host: str) -> None:
    assert is_loopback(host)
    check_bind(host, None)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.1.2.3", "console.example.com"])
def test_listening_beyond_loopback_needs_a_password_file(host: str) -> None:
    assert not is_loopback(host)
    with pytest.raises(ManagerConfigError, match="--password-file"):
        check_bind(host, None)
    check_bind(host, "users.txt")


def test_listen_addresses_parse_and_bad_ones_name_the_option() -> None:
    assert parse_listen("127.0.0.1:8080") == ("127.0.0.1", 8080)
    assert parse_listen("[::1]:9000") == ("::1", 9000)
    for bad in ("8080", "host:", "host:http", ":80", "h:70000"):
        with pytest.raises(ManagerConfigError, match="--listen"):
            parse_listen(bad)


def test_the_command_refuses_a_public_address_in_one_line(capsys: pytest.CaptureFixture[str]
                                                          ) -> None:
    assert main(["manager", "--bootstrap-server", "127.0.0.1:9", "--listen",
                 "0.0.0.0:8080"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "beyond loopback" in err and "--password-file" in err


def _basic(user_password: bytes) -> str:
    return "Basic " + base64.b64encode(user_password).decode()


def test_password_file_and_credentials(tmp_path: Path) -> None:
    path = tmp_path / "users"
    path.write_text("# console users\nadmin:s3cret\n\nops:pa:ss\n")
    users = read_password_file(str(path))
    assert users == {"admin": "s3cret", "ops": "pa:ss"}
    assert credentials_match(_basic(b"admin:s3cret"), users)
    assert credentials_match(_basic(b"ops:pa:ss"), users)
    assert not credentials_match(_basic(b"admin:wrong"), users)
    assert not credentials_match(_basic(b"nobody:s3cret"), users)
    assert not credentials_match("Basic !!!", users)
    assert not credentials_match(None, users)


@pytest.mark.parametrize("text", ["", "# only a comment\n", "no-colon\n", ":nouser\n"])
def test_unusable_password_files_stop_start_up(tmp_path: Path, text: str) -> None:
    path = tmp_path / "users"
    path.write_text(text)
    with pytest.raises(ManagerConfigError, match="--password-file"):
        read_password_file(str(path))


def test_a_missing_password_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ManagerConfigError, match="missing"):
        read_password_file(str(tmp_path / "missing"))


@pytest.mark.parametrize("host", ["0.0.0.0", "10.1.2.3"])
def test_tls_alone_also_allows_listening_beyond_loopback(host: str) -> None:
    check_bind(host, None, tls=True)


def test_console_tls_checks_its_files_at_start_up(tmp_path: Path) -> None:
    import trustme

    from clients.manager.tls import ConsoleTls, console_tls

    ca = trustme.CA()
    server = ca.issue_cert("localhost")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    server.cert_chain_pems[0].write_to_path(str(cert))
    server.private_key_pem.write_to_path(str(key))
    assert console_tls(None, None) is None
    assert console_tls(str(cert), str(key)) == ConsoleTls(str(cert), str(key))
    with pytest.raises(ManagerConfigError, match="go together"):
        console_tls(str(cert), None)
    with pytest.raises(ManagerConfigError, match="No such file"):
        console_tls(str(tmp_path / "missing.pem"), str(key))
    other = tmp_path / "other-key.pem"
    ca.issue_cert("elsewhere").private_key_pem.write_to_path(str(other))
    with pytest.raises(ManagerConfigError, match="not a PEM certificate and its"):
        console_tls(str(cert), str(other))


def test_the_command_refuses_half_a_tls_pair_in_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["manager", "--bootstrap-server", "127.0.0.1:9",
                 "--certfile", str(tmp_path / "cert.pem")]) == 1
    assert capsys.readouterr().err.strip().splitlines() == [
        "raftka manager: --certfile and --keyfile go together: give both"]


def test_an_ipv6_listen_address_needs_its_brackets() -> None:
    for bad in ("[::1:8080", "::1:8080", "[]:8080", "a]:8080"):
        with pytest.raises(ManagerConfigError, match=r"in brackets \(\[::1\]:8080\)"):
            parse_listen(bad)


def test_a_taken_address_stops_the_console_naming_it() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ManagerConfigError) as refused:
            open_listener("127.0.0.1", port)
    assert str(refused.value) == f"cannot listen on 127.0.0.1:{port}: address already in use"


def test_a_bad_client_setting_or_page_timeout_stops_the_command_naming_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    settings = tmp_path / "client.properties"
    settings.write_text("request.timeout.ms=soon\n")
    assert main(["manager", "--bootstrap-server", "127.0.0.1:9", "--listen", "127.0.0.1:0",
                 "--command-config", str(settings)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "request.timeout.ms" in err
    assert main(["manager", "--bootstrap-server", "127.0.0.1:9", "--page-timeout", "0"]) == 1
    assert capsys.readouterr().err == ("raftka manager: --page-timeout must be at least 1 "
                                       "second\n")
