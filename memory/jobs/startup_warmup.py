"""Load what the first request would otherwise pay for: the embedding model(s), the tiktoken
encoding, jieba's dictionary and the vector index (together several seconds on a cold process).

The web process loads them on a background thread (``start_warm_up``), so the port answers at once:
``/healthz`` is 200 throughout and ``/readyz`` is 503 (``warmup: loading``) until they are loaded.
A request that arrives meanwhile loads what it needs itself (the loaders are locked, so it waits for
the same copy instead of loading a second one).
"""
from __future__ import annotations

import gc
import logging
import threading
import time

logger = logging.getLogger(__name__)

__all__ = ["settle", "start_warm_up", "wait_warm", "warm_up", "warmup_status"]

_done = threading.Event()
_state: dict = {"status": "not_started"}


def warm_up() -> None:
    """Load everything now. Raises if a model cannot be loaded (the vector index may be down: it
    degrades recall, it does not stop the service)."""
    from django.conf import settings

    from common.text import ensure_jieba
    from conversations.tokens import get_encoding
    from memory.embeddings import get_embedder

    embedder = get_embedder(settings.EMBEDDING_MODEL)
    embedder.encode_one("warm-up")
    for model in getattr(embedder, "parts", (embedder,)):
        model.encode_query("warm-up")  # a query graph of its own (int8) loads its weights on first use
    # The learned gate and judge read their own model's vectors (memory/learn/encode.py). With another
    # live model that is a second embedder, loaded here rather than by the first write that needs it: a
    # write that loaded it held the user's write lock for seconds (issue 39, the Redis-pause fault test).
    from memory.learn.encode import GATE_EMBEDDER
    from memory.learn.gate import get_gate
    from memory.learn.judge import encoder

    get_gate()
    encoder()
    get_embedder(GATE_EMBEDDER).encode_one("warm-up")
    get_encoding()
    ensure_jieba()
    try:
        from common.sqlite_stats import sqlite_analyze

        sqlite_analyze()  # the planner's statistics, before the first recall needs them
    except Exception as exc:
        logger.warning("warm-up: planner statistics not refreshed (%s)", type(exc).__name__)
    try:
        from memory.models import PAYLOAD_VERSION
        from memory.vector_index import may_open_vector_index
        from memory.vectors import active_collection_row

        if may_open_vector_index():
            live = active_collection_row()  # opens the index and its live collection
            if live.payload_version < PAYLOAD_VERSION:
                # Searches still work (they use the fields the points have), one condition slower.
                logger.warning("vector collection %s holds payload version %d (current %d): run "
                               "`manage.py rebuild_projections`", live.name, live.payload_version, PAYLOAD_VERSION)
    except Exception as exc:
        logger.warning("warm-up: vector index not opened (%s); recall degrades until it is", type(exc).__name__)
    finally:
        from django.db import connection

        connection.close()  # this thread's own connection


def settle() -> None:
    """Once the process serves: the recall snapshots of the most recently active users, then freeze
    what start-up built (models, dictionaries, snapshots: ~600k objects) out of the cyclic garbage
    collector's reach, whose full passes over them paused requests for tens of milliseconds."""
    from django.conf import settings

    if settings.RECALL_CORPUS["warm"]:
        from memory.recall.snapshot_cache import warm

        try:
            built = warm()
            logger.info("warm-up: %d recall snapshots built", built)
        except Exception as exc:  # a cold snapshot is built by the recall that needs it
            logger.warning("warm-up: recall snapshots not built (%s)", type(exc).__name__)
        finally:
            from django.db import connection

            connection.close()
    gc.collect()
    gc.freeze()


def _run() -> None:
    started = time.perf_counter()
    try:
        warm_up()
        _state.update(status="ready", seconds=round(time.perf_counter() - started, 2))
        logger.info("warm-up done in %.1f s", time.perf_counter() - started)
    except Exception as exc:
        _state.update(status="failed", error=type(exc).__name__, seconds=round(time.perf_counter() - started, 2))
        logger.error("warm-up failed: %s", type(exc).__name__)
    finally:
        _done.set()
    settle()
    # Steady state: what a long-running process is in (reported by /readyz; benchmarks wait for it).
    _state["settled"] = True


def start_warm_up() -> None:
    if _state["status"] != "not_started":
        return
    _state.update(status="loading")
    threading.Thread(target=_run, name="warm-up", daemon=True).start()


def wait_warm(timeout: float | None = None) -> bool:
    """True once a started warm-up has finished (or none was started)."""
    if _state["status"] == "not_started":
        return True
    return _done.wait(timeout)


def warmup_status() -> dict:
    """`not_started` (tests, management commands: lazy loading), `loading`, `ready` or `failed`."""
    return dict(_state)
