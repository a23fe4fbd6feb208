"""The error the ``raftka`` data source raises for its options."""


class SparkOptionError(ValueError):
    """An option of the raftka source or sink is missing, doubled or invalid."""
