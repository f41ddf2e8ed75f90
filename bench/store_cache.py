"""Built benchmark stores (SQLite + embedded Qdrant shard + what the runs need to query them), kept
on disk keyed by what determines their content, so repeated runs copy a store instead of building it.

Cache root: ``$BENCH_CACHE_DIR`` (default ``~/.cache/memsvc-bench``). A store is a directory
``<name>-<key>/`` with ``var/`` (a var dir: ``memory.sqlite3``, ``qdrant/``) and ``meta.json``;
it is written under a temporary name and renamed when complete, so a crashed build is never used.
Delete the directory to force a rebuild (or pass ``--rebuild``).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

from bench.common import REPO_ROOT


def cache_root() -> Path:
    root = Path(os.environ.get("BENCH_CACHE_DIR") or Path.home() / ".cache" / "memsvc-bench")
    root.mkdir(parents=True, exist_ok=True)
    return root


def onnx_dir() -> Path:
    """One ONNX export of MiniLM for every benchmark process (each var dir would export its own)."""
    path = cache_root() / "onnx"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _schema_fingerprint() -> str:
    """Migrations and the loader decide the rows: a change to either makes a new store."""
    h = hashlib.sha256()
    for path in sorted(REPO_ROOT.glob("*/migrations/0*.py")):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    for path in [REPO_ROOT / "bench/synth.py", *sorted(REPO_ROOT.glob("memory/projections/*.py"))]:
        h.update(path.read_bytes())
    return h.hexdigest()[:12]


def store_key(params: dict) -> str:
    blob = json.dumps({**params, "schema": _schema_fingerprint()}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def store_path(name: str, params: dict) -> Path:
    return cache_root() / f"{name}-{store_key(params)}"


def read_meta(store: Path) -> dict | None:
    meta = store / "meta.json"
    if not (store / "var").is_dir() or not meta.is_file():
        return None
    return json.loads(meta.read_text(encoding="utf-8"))


def commit(building: Path, store: Path, meta: dict) -> None:
    (building / "meta.json").write_text(json.dumps(meta, ensure_ascii=False), encoding="utf-8")
    if store.exists():
        shutil.rmtree(store)
    os.replace(building, store)


def drop_cached_pages(root: Path) -> None:
    """Ask the kernel to drop the cached pages of every file under root (written back first). A 1M
    run copies the 9 GiB store twice: the pages of a copy no phase reads (the cached store; the
    benchmark's own copy once its floor is measured; gunicorn's before it serves) crowded out those of
    the copy in use, which then read from disk, as no node serving one store would (and a floor read
    from disk flatters the ratio)."""
    os.sync()
    for path in _files(root):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def read_pages(root: Path) -> None:
    """Read every file under root once, so the phase that uses this copy starts with it in the page
    cache, as a node that has served its store for a while has it."""
    for path in _files(root):
        with open(path, "rb", buffering=0) as f:
            while f.read(8 << 20):
                pass


def _files(root: Path) -> list[Path]:
    return [path for path in root.rglob("*") if path.is_file()]


def copy_var(store: Path, dest: Path) -> Path:
    """A private copy of the store's var dir (runs write to it: access counts, writes, caches)."""
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(store / "var", dest)
    return dest


def load_vectors(model_id: str) -> dict:
    """text -> vector of every text earlier builds encoded under this model (empty if none)."""
    import numpy as np

    path = _vectors_path(model_id)
    if not path.is_file():
        return _harvest(model_id)
    with np.load(path, allow_pickle=False) as data:
        return dict(zip(data["texts"].tolist(), data["vectors"]))


def _harvest(model_id: str) -> dict:
    """The stored vectors of the stores already built (a store built before vectors were kept)."""
    import sqlite3

    import numpy as np

    out: dict = {}
    for db in cache_root().glob("*/var/memory.sqlite3"):
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            rows = conn.execute("SELECT m.content, e.vector FROM memory_memory m JOIN memory_memoryembedding e "
                                "ON e.memory_id = m.id WHERE e.model_id = ?", (model_id,))
            for content, blob in rows:
                out.setdefault(content, np.frombuffer(blob, dtype=np.float32).copy())
    return out


def save_vectors(model_id: str, cache: dict) -> None:
    import numpy as np

    if not cache:
        return
    path = _vectors_path(model_id)
    tmp = path.with_name(path.name + ".tmp.npz")
    texts = list(cache)
    np.savez(tmp, texts=np.array(texts), vectors=np.stack([cache[t] for t in texts]).astype(np.float32))
    os.replace(tmp, path)


def _vectors_path(model_id: str) -> Path:
    safe = "".join(c if c.isalnum() or c in "-._" else "_" for c in model_id)
    return cache_root() / f"vectors-{safe}.npz"
