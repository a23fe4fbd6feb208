"""Partition counts and replication factors the protocol cannot carry (int32, int16) fail
in the admin client and in `raftka topics` with a clear error before anything is sent."""

from __future__ import annotations

import pytest
import trio

from broker.cli.main import main
from clients.admin import Admin, NewTopic
from clients.protocol import ApiKey
from tests.unit.clients.stub_broker import StubBroker

UNREACHABLE = "127.0.0.1:1"


@pytest.mark.parametrize("kwargs, field", [
    ({"num_partitions": 2**31}, "num_partitions"),
    ({"num_partitions": -(2**31) - 1}, "num_partitions"),
    ({"replication_factor": 32768}, "replication_factor"),
    ({"replication_factor": 1.0}, "replication_factor"),
    ({"replica_assignments": {0: [2**31]}}, "a broker id"),
    ({"replica_assignments": {2**40: [1]}}, "a partition id"),
])
def test_new_topic_refuses_what_the_request_cannot_carry(kwargs: dict, field: str) -> None:
    with pytest.raises(ValueError, match=field) as info:
        NewTopic("t", **kwargs)
    assert "'t'" in str(info.value)


def test_new_topic_takes_the_extremes_the_protocol_carries() -> None:
    assert NewTopic("t", 2**31 - 1, 32767).replication_factor == 32767
    assert NewTopic("t", -1, -1).num_partitions == -1


async def test_create_partitions_refuses_an_int32_overflow_before_sending(
        nursery: trio.Nursery) -> None:
    broker = await StubBroker({ApiKey.CREATE_PARTITIONS: lambda r: {"results": []}}).start(nursery)
    async with Admin(bootstrap_servers=f"127.0.0.1:{broker.port}") as admin:
        with pytest.raises(ValueError, match="new partition count of topic 'big'"):
            await admin.create_partitions({"big": 2**31})
    assert broker.requests(ApiKey.CREATE_PARTITIONS) == []


@pytest.mark.parametrize("args, message", [
    (["--create", "--topic", "x", "--replication-factor", "32768"],
     "Error while executing topic command : The replication factor must be between 1 and "
     "32767 inclusive"),
    (["--create", "--topic", "x", "--replication-factor", "0"],
     "Error while executing topic command : The replication factor must be between 1 and "
     "32767 inclusive"),
    (["--create", "--topic", "x", "--partitions", "0"],
     "Error while executing topic command : The partitions must be greater than 0"),
    (["--create", "--topic", "x", "--partitions", "4000000000"],
     "raftka topics: argument --partitions: 4000000000 is out of range (a 32-bit integer, "
     "at most 2147483647) (see raftka topics --help)"),
    (["--create", "--topic", "x", "--replication-factor", "99999999999"],
     "raftka topics: argument --replication-factor: 99999999999 is out of range (a 32-bit "
     "integer, at most 2147483647) (see raftka topics --help)"),
    (["--alter", "--topic", "x", "--partitions", "2147483648"],
     "raftka topics: argument --partitions: 2147483648 is out of range (a 32-bit integer, "
     "at most 2147483647) (see raftka topics --help)"),
])
def test_topics_command_refuses_counts_in_one_line(capsys: pytest.CaptureFixture[str],
                                                   args: list[str], message: str) -> None:
    # No broker listens there: the check comes before any connection.
    try:
        code = main(["topics", "--bootstrap-server", UNREACHABLE, *args])
    except SystemExit as exc:
        code = exc.code
    assert code in (1, 2)
    assert capsys.readouterr().err.splitlines() == [message]
