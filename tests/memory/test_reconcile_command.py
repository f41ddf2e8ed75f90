"""`reconcile_projections --dry-run` on a single node (issue 42): the web process holds the embedded
shard, so the command cannot open it. It reports what MySQL alone knows and says how to get the full
comparison; `--enqueue --wait` has the shard's owner run it and prints that run's report."""
import subprocess
import sys
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db.models import F

from memory.models import Memory
from memory.services.memories import MemoryInput, memory_create
from memory.vector_index import reset_vector_index
from tests.faults.conftest import die_with_parent, env_for_subprocess

pytestmark = pytest.mark.django_db


@pytest.fixture
def shard_held_elsewhere(settings, tmp_path):
    """Another process (standing in for the web process) opens the embedded shard and keeps it."""
    from memory.embeddings import get_embedder
    from memory.vectors import collection_name_for

    embedder = get_embedder(settings.EMBEDDING_MODEL)
    path, name = tmp_path / "qdrant", collection_name_for(embedder)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import time; from memory.vector_index.edge import EdgeVectorIndex; "
         f"i = EdgeVectorIndex({str(path)!r}); i.ensure_collection({name!r}, {embedder.dim}); i.set_live({name!r}); "
         "print('open', flush=True); time.sleep(120)"],
        cwd=settings.BASE_DIR, env=env_for_subprocess(DJANGO_SETTINGS_MODULE="config.settings"),
        stdout=subprocess.PIPE, text=True, preexec_fn=die_with_parent)
    try:
        assert holder.stdout.readline().strip() == "open"
        settings.VECTOR_INDEX_PATH = str(path)
        settings.QDRANT_URL = ""
        reset_vector_index()
        yield
    finally:
        holder.kill()
        holder.wait(timeout=10)
        reset_vector_index()


def test_dry_run_where_the_shard_is_held_reports_from_mysql_and_says_how(org, shard_held_elsewhere, monkeypatch,
                                                                        django_capture_on_commit_callbacks):
    monkeypatch.setattr("memory.enqueue.enqueue", lambda name, *args: False)  # its projection was never queued
    with django_capture_on_commit_callbacks(execute=True):
        memory_create(MemoryInput(org=org, user_id="u1", kind="fact", content="I keep bees behind the orchard"))
    assert Memory.objects.filter(projected_version__lt=F("version")).count() == 1
    out = StringIO()
    call_command("reconcile_projections", "--dry-run", stdout=out)
    text = out.getvalue()
    assert "lagging    1" in text and "active 1" in text
    assert "reconcile_projections --dry-run --enqueue --wait" in text and "nothing changed" in text
    with pytest.raises(CommandError, match="--enqueue --wait"):  # a fixing run says the same, and fails
        call_command("reconcile_projections", stdout=StringIO())


def test_enqueue_wait_prints_the_report_of_the_run_the_owner_made(org, own_index, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        memory_create(MemoryInput(org=org, user_id="u1", kind="fact", content="I am allergic to penicillin"))
    own_index.delete([Memory.objects.get().id], collection=own_index.live_collection())  # a point gone missing
    Memory.objects.update(updated_at=F("updated_at") - timedelta(minutes=5))
    out = StringIO()
    call_command("reconcile_projections", "--dry-run", "--enqueue", "--wait", "30", stdout=out)  # eager: runs here
    text = out.getvalue()
    assert "missing    1" in text and "fixed      0" in text and "nothing changed" in text
    assert own_index.count() == 0  # a dry run
