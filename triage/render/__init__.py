"""Rendering shared by the faces (the CLI and the TUI): rich pieces, no terminal or screen of their own."""
