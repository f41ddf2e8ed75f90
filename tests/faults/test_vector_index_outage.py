"""Fault 2: the vector index is unavailable during writes.

Two ways it goes away: the embedded shard is closed under the running process, or the service
points at a Qdrant server that is not there (QDRANT_URL on a dead port). Holds: every write is
committed to MySQL (the commit point), recall answers from keyword candidates flagged
`degraded: true` and still finds what was written, context says `recall_degraded`; after recovery
the maintenance jobs (`extraction_resume`, `projections_reconcile`) repair everything, a second
reconcile finds nothing (0 missing / 0 stale / 0 orphan), every active row has
projected_version == version, and recall is whole again.

Tasks run eagerly here (the embedded profile's production mode, and the suite's default in both
profiles), and the requests run in autocommit as in a web process, so the on-commit projection hook
runs inside the request exactly as it does in production.
"""
import pytest
from django.db.models import F

from conversations.models import Message
from memory.jobs.lost_work_resume import extraction_resume
from memory.models import Memory
from memory.projections.reconcile import projections_reconcile
from memory.vector_index import get_vector_index, reset_vector_index
from memory.vectors import active_collection
from tests.conversations.api_helpers import create_conversation
from tests.faults.conftest import FACTS, duplicates, free_port, post, server_client

BEFORE, EXPLICIT, APPENDED = 4, 8, 8


def take_down(mode: str, settings) -> None:
    if mode == "closed-embedded-shard":
        get_vector_index().close()
    else:
        settings.QDRANT_URL = f"http://127.0.0.1:{free_port()}"  # nothing listens there
        reset_vector_index()


def bring_back(mode: str, settings) -> None:
    if mode == "closed-embedded-shard":
        reset_vector_index()  # reopens the same shard, with the points it had
    else:
        settings.QDRANT_URL = ":memory:"  # the server is back, empty (a replacement node)
        reset_vector_index()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("mode", ["closed-embedded-shard", "dead-qdrant-server"])
def test_vector_index_outage_loses_nothing_and_reconcile_repairs_it(mode, org, own_index, settings, tally):
    api = server_client(org)
    conversation = create_conversation(api)
    writes = tally(f"vector index down ({mode}): writes")
    reads = tally(f"vector index down ({mode}): recall+context")
    statuses: dict[int, int] = {}

    def write(content: str) -> int | None:
        writes.attempted += 1
        response = post(api, "/api/v1/memories", {"kind": "fact", "content": content})
        statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
        writes.succeeded += response.status_code == 201
        return response.json()["memory"]["id"] if response.status_code == 201 else None

    pre = [write(FACTS[i]) for i in range(BEFORE)]
    assert None not in pre and Memory.objects.filter(id__in=pre, projected_version=1).count() == BEFORE
    assert set(pre) <= set(dict(get_vector_index().scroll(collection=active_collection())))
    statuses.clear()
    writes.attempted = writes.succeeded = 0  # count the writes made during the outage only

    # ---------------------------------------------------------------- outage
    take_down(mode, settings)
    max_id = Memory.objects.order_by("-id").values_list("id", flat=True).first()
    for i in range(BEFORE, BEFORE + EXPLICIT):
        write(FACTS[i])
    refs = []
    for i in range(BEFORE + EXPLICIT, BEFORE + EXPLICIT + APPENDED):
        writes.attempted += 1
        response = post(api, f"/api/v1/conversations/{conversation['id']}/messages",
                        {"role": "user", "content": FACTS[i], "external_ref": f"vec-{i}"})
        statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
        writes.succeeded += response.status_code == 201
        refs.append(f"vec-{i}")
    # What MySQL committed, whatever the responses said (the client cannot tell a 500 after commit).
    new = dict(Memory.objects.filter(id__gt=max_id, created_by="api").values_list("id", "content"))
    updated, invalidated_old, invalidated_new = pre[0], pre[1], min(new)
    for response in (api.patch(f"/api/v1/memories/{updated}", {"content": FACTS[0] + ", since 2019"}, format="json"),
                     post(api, f"/api/v1/memories/{invalidated_old}/invalidate", {"reason": "wrong"}),
                     post(api, f"/api/v1/memories/{invalidated_new}/invalidate", {"reason": "wrong"})):
        writes.attempted += 1
        statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
        writes.succeeded += response.status_code == 200

    degraded_answers = 0
    for memory_id, content in new.items():
        if memory_id == invalidated_new:
            continue
        reads.attempted += 1
        response = post(api, "/api/v1/recall", {"query": content, "k": 5})
        if response.status_code == 200:
            reads.succeeded += 1
            body = response.json()
            degraded_answers += body["degraded"] and body["degraded_reason"] == "vector_index_unavailable"
            reads.lost += memory_id not in [item["id"] for item in body["items"]]
    reads.attempted += 1
    response = post(api, f"/api/v1/conversations/{conversation['id']}/context", {"message": FACTS[BEFORE]})
    reads.succeeded += response.status_code == 200
    context_degraded = response.status_code == 200 and response.json()["recall_degraded"]
    unextracted_during = Message.objects.filter(external_ref__in=refs, extracted_at__isnull=True).count()
    unprojected_during = Memory.objects.filter(projected_version__lt=F("version")).count()

    # ---------------------------------------------------------------- recovery: the beat jobs' work
    bring_back(mode, settings)
    active_before = set(Memory.objects.filter(status="active").values_list("id", flat=True))
    resumed = extraction_resume(older_than_seconds=0)
    first = projections_reconcile()
    second = projections_reconcile()

    active = dict(Memory.objects.filter(org=org, status="active").values_list("id", "version"))
    points = dict(get_vector_index().scroll(collection=active_collection()))
    explicit_lost = [i for i in new if i != invalidated_new and i not in active]
    unextracted = Message.objects.filter(external_ref__in=refs, extracted_at__isnull=True).count()
    without_episode = Message.objects.filter(external_ref__in=refs).exclude(
        id__in=Memory.objects.filter(kind="episode", status="active").values("sources__message_id")).count()
    writes.lost = len(explicit_lost) + unextracted + without_episode + len(set(active) - set(points))
    writes.duplicated = duplicates(org, "u1") + len(set(points) - set(active))
    writes.extra.update(
        committed_explicit=len(new), http_status=dict(sorted(statuses.items())), unextracted_during=unextracted_during,
        unprojected_during=unprojected_during, resumed=resumed,
        reconcile1="missing={missing}/stale={stale}/orphan={orphan}/fixed={fixed}".format(**first),
        reconcile2="missing={missing}/stale={stale}/orphan={orphan}".format(**second))
    reads.extra.update(degraded_answers=degraded_answers, context_recall_degraded=context_degraded)

    assert len(new) == EXPLICIT, "an explicit write was not committed"
    assert writes.succeeded == writes.attempted, f"a write failed while the vector index was down: {statuses}"
    assert Message.objects.filter(external_ref__in=refs).count() == APPENDED
    assert reads.succeeded == reads.attempted
    assert degraded_answers == reads.attempted - 1 and context_degraded
    assert reads.lost == 0, "degraded recall did not find a memory written during the outage"
    assert unprojected_during > 0 and first["fixed"] > 0
    if mode == "closed-embedded-shard":
        # The shard kept its pre-outage points: the updated one is stale, the invalidated one an orphan;
        # the second stale row is the memory written and invalidated during the outage (never projected).
        expected = (len(active_before - set(pre)), 2, 1)
    else:
        # A replacement server starts empty: every memory active before the resume is missing.
        expected = (len(active_before), 2, 0)
    assert (first["missing"], first["stale"], first["orphan"]) == expected, first
    assert (second["missing"], second["stale"], second["orphan"]) == (0, 0, 0), second
    assert not Memory.objects.filter(status="active").exclude(projected_version=F("version")).exists()
    assert writes.lost == 0 and writes.duplicated == 0
    assert points[updated]["version"] == 2 and invalidated_old not in points

    # Recall is whole again: not degraded, and the vector index itself returns what was written meanwhile.
    for memory_id, content in list(new.items())[1:4]:
        body = post(api, "/api/v1/recall", {"query": content, "k": 5, "explain": True}).json()
        assert not body["degraded"]
        candidates = next(s for s in body["stages"] if s["stage"] == "candidates")
        assert memory_id in {int(k) for k in candidates["semantic"]}
        assert memory_id in [item["id"] for item in body["items"]]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("mode", ["closed-embedded-shard", "dead-qdrant-server"])
def test_writes_answer_success_while_the_vector_index_is_down(mode, org, own_index, settings, tally):
    """Regression: with eager tasks, memory_sync's autoretry turned VectorIndexUnavailable into celery's Retry,
    which escaped the on-commit hook: committed writes were answered 500 and appends left unextracted
    (found by this suite; fixed in memory/enqueue.py, which now swallows Retry)."""
    api = server_client(org)
    conversation = create_conversation(api)
    active_collection()
    take_down(mode, settings)
    writes = tally(f"vector index down ({mode}): HTTP answers")
    statuses = []
    for i in range(3):
        statuses.append(post(api, "/api/v1/memories", {"kind": "fact", "content": FACTS[i]}).status_code)
        statuses.append(post(api, f"/api/v1/conversations/{conversation['id']}/messages",
                             {"role": "user", "content": FACTS[10 + i]}).status_code)
    writes.attempted, writes.succeeded = len(statuses), sum(s in (200, 201) for s in statuses)
    assert writes.succeeded == writes.attempted, statuses
    assert not Message.objects.filter(extracted_at__isnull=True).exists()  # extraction did not stop halfway
