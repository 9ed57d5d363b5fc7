"""Tools for the knowledge base that stand on the engine: validate, draft, test examples, import, stats, accuracy.

The KB's data (models, loader, paths, schema) is triage.kb, below the engine.
"""
