"""The knowledge base: entry models, loading and validation of YAML entries."""

from triage.kb.loader import KBError, KnowledgeBase, load_kb
from triage.kb.models import CATEGORIES, Entry

__all__ = ["CATEGORIES", "Entry", "KBError", "KnowledgeBase", "load_kb"]
