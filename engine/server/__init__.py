"""Node processes: a KRaft controller today (`kraftd start`), brokers next. They wire the
pure cores (`engine.raft`) to sockets, files and timers, and read Kafka's configuration."""
