"""metashell's benchmarks that span packages (the attach bench: a quorum, a load and an attached tool)."""
