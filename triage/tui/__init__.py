"""The Textual face of triage: a thin UI over the engine, which never imports textual."""
