"""What the producer, consumer and admin client share: the client's view of the cluster
(`cluster`), connection pools to its brokers (`connections`) and configuration by Kafka's
names (`settings`); and the Java `.properties` format (`properties`), which the command line
and the broker's configuration read. It imports none of them, so they import it without a
cycle."""
