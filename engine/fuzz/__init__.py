"""kraftd fuzz and its targets."""
