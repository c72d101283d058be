"""Libraries of the admin side: the quorum client and storage formatting (Kafka: clients/admin, metadata/storage)."""
