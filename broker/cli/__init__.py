"""The `raftka` command as installed (`main`), and the commands that need the node's own
code: server, storage, dump-log, chaos and reassign-partitions."""
