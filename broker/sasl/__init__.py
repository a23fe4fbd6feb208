"""SASL authentication of client connections: mechanisms, the per-connection state machine,
and the listener settings they read."""
