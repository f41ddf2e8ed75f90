"""The LLM reviewer: possible conflicts and the gate's uncertain band, decided by an LLM in batches
off the request path when one is configured (D28). See run.py."""
from memory.services.llm_review.run import llm_review_configured, llm_review_run  # noqa: F401
