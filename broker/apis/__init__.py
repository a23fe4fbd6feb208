"""The request layer (Kafka's KafkaApis): one module per API family, each owning its
handlers and each API's error body; `request` holds the context every handler receives and
the router that passes every request through the one authorization hook;
`broker_apis.install_broker_apis` installs a broker listener's API set."""
