"""The metadata filesystem: lazy directory and file nodes over one image, in our layout
(`/brokers`, `/topics`, `/quorum`, ...) and Kafka's own (`/image`)."""
