"""The PySpark data source ``raftka``: Kafka topics as DataFrames, batch and streaming,
read and write, with the schema and options of Spark's own Kafka source.

Found by PySpark through the top-level module ``pyspark_raftka``; or register it with
``spark.dataSource.register(RaftkaDataSource)``.
"""

from clients.spark.options import SparkOptionError
from clients.spark.source import RaftkaDataSource

__all__ = ["RaftkaDataSource", "SparkOptionError"]
