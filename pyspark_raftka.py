"""Lets PySpark find the ``raftka`` data source by itself: PySpark imports every top-level
module named ``pyspark_*`` and registers its ``DefaultSource``."""

from clients.spark.source import RaftkaDataSource as DefaultSource

__all__ = ["DefaultSource"]
