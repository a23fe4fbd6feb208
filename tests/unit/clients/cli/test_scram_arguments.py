"""The SCRAM arguments of `storage format --add-scram` and `configs --add-config`, the client
SASL settings, and the bootstrap records file."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.bootstrap_records import (
    BootstrapRecordsError,
    read_bootstrap_records,
    write_bootstrap_records,
)
from clients.cli.scram_args import ScramArgumentError, parse_scram_argument
from clients.net.sasl import SaslCredentials, sasl_credentials
from metadata.scram import UserScramCredentialRecord


def test_parse_with_name_quotes_and_iterations() -> None:
    arg = parse_scram_argument('SCRAM-SHA-256=[name=alice,password="a,b]c",iterations=8192]',
                               need_name=True)
    assert (arg.mechanism, arg.name, arg.password, arg.iterations) == (
        "SCRAM-SHA-256", "alice", "a,b]c", 8192)
    assert "a,b]c" not in repr(arg)
    assert parse_scram_argument("SCRAM-SHA-512=[password=x]", need_name=False).iterations == 4096


@pytest.mark.parametrize("text,need_name,message", [
    ("SCRAM-SHA-1=[name=a,password=b]", True, "unknown SCRAM mechanism"),
    ("SCRAM-SHA-256=name=a,password=b", True, "must be in [ ]"),
    ("SCRAM-SHA-256=[password=secret]", True, "name is required"),
    ("SCRAM-SHA-256=[name=a]", True, "password is required"),
    ("SCRAM-SHA-256=[name=a,password=secret,iterations=10]", True, "between 4096 and 16384"),
    ("SCRAM-SHA-256=[name=a,password=secret,salt=x]", True, "unknown key salt"),
    ("SCRAM-SHA-256=[name=a,password=secret]", False, "--entity-name"),
])
def test_bad_arguments_say_why_without_the_password(text: str, need_name: bool,
                                                    message: str) -> None:
    with pytest.raises(ScramArgumentError) as failure:
        parse_scram_argument(text, need_name=need_name)
    assert message in str(failure.value)
    assert "secret" not in str(failure.value)


def test_client_sasl_settings() -> None:
    assert sasl_credentials({"security.protocol": "PLAINTEXT"}) is None
    assert sasl_credentials({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                             "sasl.username": "u", "sasl.password": "p"}) == \
        SaslCredentials("PLAIN", "u", "p")
    jaas = ('org.apache.kafka.common.security.scram.ScramLoginModule required '
            'username="carol" password="c";')
    assert sasl_credentials({"security.protocol": "SASL_PLAINTEXT",
                             "sasl.mechanism": "SCRAM-SHA-512", "sasl.jaas.config": jaas}) == \
        SaslCredentials("SCRAM-SHA-512", "carol", "c")
    with pytest.raises(ValueError, match="sasl.mechanism GSSAPI"):
        sasl_credentials({"security.protocol": "SASL_PLAINTEXT", "sasl.username": "u",
                          "sasl.password": "p"})
    with pytest.raises(ValueError, match="sasl.username"):
        sasl_credentials({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"})
    assert "p" not in repr(SaslCredentials("PLAIN", "u", "p")).split("username")[0]


def test_bootstrap_records_round_trip_owner_only(tmp_path: Path) -> None:
    assert read_bootstrap_records(tmp_path) == []
    records = [UserScramCredentialRecord("alice", 2, b"s", b"k", b"v", 4096)]
    path = write_bootstrap_records(tmp_path, records)
    assert path.stat().st_mode & 0o777 == 0o600
    assert read_bootstrap_records(tmp_path) == records
    path.write_bytes(b"garbage")
    with pytest.raises(BootstrapRecordsError):
        read_bootstrap_records(tmp_path)
