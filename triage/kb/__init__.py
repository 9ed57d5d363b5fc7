"""The knowledge base: entry models (`models`), safe YAML loading (`loader`), validation and tools.

Nothing is imported here, so that importing the models does not pull in the YAML loader.
"""
