"""The demo histories, generated with the engine."""
