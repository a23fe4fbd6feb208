"""The `raftka` admin command line: one module per command, using only the clients."""
