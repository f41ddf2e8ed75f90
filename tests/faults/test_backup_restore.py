"""Fault 6: backup and restore of the system of record.

Only MySQL is backed up (`mariadb-dump` of the test database). The dump is loaded into a fresh
database (utf8mb4), the service is pointed at it, the vector projection is rebuilt into an empty
index path with `manage.py rebuild_projections` (the documented procedure), and recall must answer
the same ids in the same order for every query as the original did from the same state.
docs/reliability.md describes the procedure.
"""
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.core.cache import cache
from django.db import connection

from memory.models import Memory, VectorCollection
from memory.recall import snapshot_cache
from memory.vector_index import get_vector_index, reset_vector_index
from memory.vectors import active_collection
from tests.conversations.api_helpers import create_conversation
from tests.faults.conftest import FACTS, env_for_subprocess, post, server_client

ROOT = Path(settings.BASE_DIR)
QUERIES = [
    "Is the user allergic to anything?",
    "Who does our bookkeeping?",
    "农场在哪里？",
    "维保建议怎么排序",
    "What grows in the greenhouse?",
    "When does the insurance renew?",
    "What is the dog called?",
    "How should reminders reach me?",
    "Where is the bank?",
    "harvester header width",
]
TABLES = ["memory_memory", "memory_memoryversion", "memory_memorysource", "memory_memoryembedding",
          "conversations_message", "conversations_conversation", "tenancy_apikey", "memory_vectorcollection"]


def _mysql_args() -> list[str]:
    s = connection.settings_dict
    args = ["-h", s["HOST"] or "127.0.0.1", "-P", str(s["PORT"] or 3306), "-u", s["USER"]]
    return args + ([f"-p{s['PASSWORD']}"] if s["PASSWORD"] else [])


def _client(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed")
    return found


def _row_counts() -> dict[str, int]:
    with connection.cursor() as cursor:
        counts = {}
        for table in TABLES:
            cursor.execute(f"SELECT COUNT(*) FROM {table}")
            counts[table] = cursor.fetchone()[0]
    return counts


@pytest.fixture
def restore_target():
    """A fresh database name; afterwards the connection is pointed back and the copy dropped."""
    original = connection.settings_dict["NAME"]
    name = f"test_restore_{secrets.token_hex(4)}"
    yield name
    connection.close()
    connection.settings_dict["NAME"] = original
    subprocess.run([_client("mariadb"), *_mysql_args(), "-e", f"DROP DATABASE IF EXISTS `{name}`"], check=False)


def recall_round(api) -> list[list[int]]:
    answers = []
    for query in QUERIES:
        response = post(api, "/api/v1/recall", {"query": query, "k": 5})
        assert response.status_code == 200, response.content
        assert not response.json()["degraded"]
        answers.append([item["id"] for item in response.json()["items"]])
    return answers


@pytest.mark.service_only
@pytest.mark.django_db(transaction=True)
def test_restore_of_a_sor_dump_and_rebuilt_projections_recall_the_same(org, own_index, restore_target, tmp_path,
                                                                       settings, tally):
    dump_tool, mysql_tool = _client("mariadb-dump"), _client("mariadb")
    api = server_client(org)
    conversation = create_conversation(api)
    ids = []
    for i, content in enumerate(FACTS[:24]):
        kind = "preference" if i % 4 == 0 else "fact"
        ids.append(post(api, "/api/v1/memories", {"kind": kind, "content": content}).json()["memory"]["id"])
    response = post(api, f"/api/v1/conversations/{conversation['id']}/messages/batch", {"messages": [
        {"role": "user", "content": content} for content in FACTS[24:]]})
    assert response.status_code == 201
    assert api.patch(f"/api/v1/memories/{ids[3]}", {"content": FACTS[3] + " (Maria Keller-Wang since May)"},
                     format="json").status_code == 200
    assert post(api, f"/api/v1/memories/{ids[9]}/invalidate", {"reason": "wrong"}).status_code == 200

    # ---------------------------------------------------------------- backup: the system of record only
    source = connection.settings_dict["NAME"]
    dump = tmp_path / "sor.sql"
    with open(dump, "wb") as out:
        subprocess.run([dump_tool, *_mysql_args(), "--single-transaction", "--default-character-set=utf8mb4",
                        "--hex-blob", "--routines", "--triggers", source], stdout=out, check=True)
    counts_at_dump = _row_counts()
    reference = recall_round(api)  # from the state the dump holds (recall only touches access stats)

    # ---------------------------------------------------------------- restore into a fresh database
    subprocess.run([mysql_tool, *_mysql_args(), "-e",
                    f"CREATE DATABASE `{restore_target}` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"], check=True)
    with open(dump, "rb") as dump_in:
        subprocess.run([mysql_tool, *_mysql_args(), "--default-character-set=utf8mb4", restore_target],
                       stdin=dump_in, check=True)
    # Rebuild the vector projection into an empty index with the management command (its own process).
    fresh_index = tmp_path / "restored-qdrant"
    s = connection.settings_dict
    env = env_for_subprocess(
        DATABASE_URL=f"mysql://{s['USER']}:{s['PASSWORD'] or ''}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 3306}/"
                     f"{restore_target}",
        VECTOR_INDEX_PATH=str(fresh_index), MEMORY_VAR_DIR=str(tmp_path / "var"),
        TIKTOKEN_CACHE_DIR=str(settings.TIKTOKEN_CACHE_DIR), REDIS_URL="", CELERY_BROKER_URL="memory://")
    env.pop("QDRANT_URL", None)
    rebuilt = subprocess.run([sys.executable, "manage.py", "rebuild_projections", "--verbosity", "0"], cwd=ROOT,
                             env=env, capture_output=True, text=True, timeout=300)
    assert rebuilt.returncode == 0, rebuilt.stderr[-3000:]
    report = dict(line.split(None, 1) for line in rebuilt.stdout.splitlines() if line.strip())

    # ---------------------------------------------------------------- the service on the restored copy
    connection.close()
    connection.settings_dict["NAME"] = restore_target
    settings.VECTOR_INDEX_PATH = str(fresh_index)
    reset_vector_index()
    cache.clear()  # the cache is a projection too: start it empty
    snapshot_cache.clear()
    VectorCollection.forget_cached_live()
    counts_restored = _row_counts()
    active = set(Memory.objects.filter(status="active").values_list("id", flat=True))
    points = set(dict(get_vector_index().scroll(collection=active_collection())))
    restored = recall_round(api)

    t = tally("backup (mariadb-dump of the SoR) + restore + rebuild_projections")
    t.attempted = len(QUERIES)
    t.succeeded = sum(a == b for a, b in zip(reference, restored))
    t.lost = sum(len(set(a) - set(b)) for a, b in zip(reference, restored)) + len(active - points)
    t.duplicated = sum(len(b) - len(set(b)) for b in restored) + len(points - active)
    t.extra.update(dump_bytes=dump.stat().st_size, memories=counts_restored["memory_memory"],
                   active=len(active), points=len(points), rebuilt=report.get("upserted", "?").strip(),
                   encoded=report.get("encoded", "?").strip(), tables_equal=counts_restored == counts_at_dump)
    assert counts_restored == counts_at_dump
    assert points == active
    assert restored == reference, list(zip(QUERIES, reference, restored))
    assert all(reference), "every query recalls something"
    assert t.lost == 0 and t.duplicated == 0
