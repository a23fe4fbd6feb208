"""Raftka."""
