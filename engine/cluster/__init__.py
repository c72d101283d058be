"""kraftd cluster: local processes, their layout, chaos, security and Kafka distributions."""
