"""Fault runs (`raftka chaos`): the checker of a run's history."""
