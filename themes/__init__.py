"""Textual stylesheets and Pygments styles shipped with metashell."""
