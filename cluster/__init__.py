"""What runs Raftka nodes from outside: the launcher that lays out, starts and stops node
processes (scripts/bootstrap-quorum, start-node, stop-quorum), the pytest plugin and fault
tools built on it, and the chaos run. The node (`broker`) imports none of it."""
