"""Load what the first request would otherwise pay for: the embedding model(s), the tiktoken
encoding and jieba's dictionary (together several seconds on a cold process)."""
import logging

logger = logging.getLogger(__name__)


def warm_up() -> None:
    from django.conf import settings

    from conversations.textutil import ensure_jieba
    from conversations.tokens import get_encoding
    from memory.embeddings import get_embedder

    try:
        get_embedder(settings.EMBEDDING_MODEL).encode_one("warm-up")
        get_encoding()
        ensure_jieba()
    except Exception as exc:  # warm-up is an optimisation; the request path loads lazily anyway
        logger.warning("warm-up failed: %s", type(exc).__name__)
