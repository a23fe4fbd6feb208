"""What the producer, consumer and admin client share: the client's view of the cluster
(`cluster`), connection pools to its brokers (`connections`) and configuration by Kafka's
names (`settings`), with the configuration error (`errors`) and the Java `.properties`
format (`properties`), which the broker's configuration uses too. It imports none of the
three, so they import it without a cycle."""
