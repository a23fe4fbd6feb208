"""Client quota enforcement (Kafka's ClientQuotaManager, KIP-13/KIP-124/KIP-219)."""
