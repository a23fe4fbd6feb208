"""Two followers have nothing to say to each other between elections. pysyncobj drops a
connection that has read nothing for its connection timeout when it next sends on it, and
the message with it: without keepalives the next candidate's vote request to the other
follower was lost, and most elections took a second round."""

from __future__ import annotations

import time

import trio

from pysyncobj.tcp_connection import TcpConnection


def last_read(conn: TcpConnection) -> float:
    return conn._TcpConnection__lastReadTime  # type: ignore[attr-defined]


async def test_followers_keep_hearing_from_each_other(cluster_factory) -> None:
    cluster = cluster_factory(3)
    cluster.start_all()
    leader = await cluster.leader()
    first, second = (q._node for q in cluster.nodes.values() if q is not leader)
    timeout_s = first._getConf().connectionTimeout    # 1 s here
    await trio.sleep(2.5 * timeout_s)
    for node, other in ((first, second), (second, first)):
        transport = node._SyncObj__transport
        peer = next(n for n in node.otherNodes if n.id == other.selfNode.id)
        silent_s = time.monotonic() - last_read(transport._connections[peer])
        # Well within the timeout: a vote request sent now would not find it dropped.
        assert silent_s < timeout_s / 2, silent_s
