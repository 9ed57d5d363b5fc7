"""The panes of the triage app."""
