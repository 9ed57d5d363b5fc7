"""Command-line faces over the engine. Each command module exposes `register(subparsers)`."""
