"""``raftka manager``: a web console over a Kafka-compatible cluster, built only on Raftka's
admin and consumer clients (``bind`` checks where it may listen, ``gather`` reads the
cluster, ``views`` shapes what each page shows, ``app`` serves the pages)."""
