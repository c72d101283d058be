"""The dashboard: data model, history, events and panel rows (metashell.dashboard.model)."""
