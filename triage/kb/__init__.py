"""The knowledge base's data: entry models (`models`), safe YAML loading (`loader`), where KB dirs are
(`paths`), the JSON schema (`schema`). The engine stands on it; the tools for contributors are triage.kbtools.

Nothing is imported here, so that importing the models does not pull in the YAML loader.
"""
