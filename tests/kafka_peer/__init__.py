"""Apache Kafka as the test peer: its jars (distribution), its nodes and clusters on 127.0.0.1,
and the scripted cluster history the comparison tests read."""
