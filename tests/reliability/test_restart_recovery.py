"""A restart with messages pending extraction finishes them with nothing but the service running
(no beat; on the service profile the web process and one worker, as documented).

"Pending" is what a crash between COMMIT and extraction leaves: the messages are stored with
`extracted_at` NULL and no task exists for them. They are written here with the extraction
receiver disconnected, as a process killed right after its commit would leave them."""
import uuid

import pytest

from tests.faults.conftest import wait_until
from tests.reliability.served import SERVICE_PROFILE, Served

MESSAGES = 12

WRITE_PENDING = """
from conversations.signals import messages_appended
from conversations.services import conversation_create, messages_append
from tenancy.models import Org

messages_appended.disconnect(dispatch_uid="memory.extract_on_append")  # the crash: no extraction after COMMIT
org = Org.objects.get(slug=ORG)
for n in range(2):
    conversation, _ = conversation_create(org=org, owner_user=f"crash-{n}")
    messages_append(conversation=conversation, user_id=f"crash-{n}", messages=[
        {"role": "user", "content": f"Please remember: site {n}-{i} is inspected every {i + 2} months.",
         "external_ref": f"{PREFIX}-{n}-{i}"} for i in range(COUNT)])
"""


def write_pending(served: Served, prefix: str) -> None:
    code = WRITE_PENDING.replace("PREFIX", repr(prefix)).replace("COUNT", str(MESSAGES // 2))
    if SERVICE_PROFILE:
        from conversations.signals import messages_appended
        from memory.receivers import on_messages_appended

        try:
            exec(code.replace("ORG", repr("served")), {})
        finally:
            messages_appended.connect(on_messages_appended, dispatch_uid="memory.extract_on_append")
    else:
        served.manage("shell", "-c", code.replace("ORG", repr("demo")))


@pytest.fixture
def served(tmp_path):
    node = Served(tmp_path)
    try:
        node.prepare()
        yield node
    finally:
        node.close()


@pytest.mark.django_db(transaction=True)  # the service profile's processes use the test database
def test_a_restart_finishes_what_a_crash_left_pending(served):
    prefix = uuid.uuid4().hex[:8]
    write_pending(served, prefix)
    assert sum(served.stored_refs(prefix).values()) == MESSAGES
    assert served.pending() == MESSAGES

    served.start_worker()
    served.start_web()
    served.wait_ready()

    assert wait_until(lambda: served.pending() == 0, timeout=75, interval=0.5), (served.pending(), served.logs())
    episodes = served.episodes_per_message(prefix)
    assert len(episodes) == MESSAGES and set(episodes.values()) == {1}
    code, body = served.readyz()
    assert code == 200 and body["checks"]["extraction"]["messages"] == 0
    sweep = body["checks"]["maintenance"]["jobs"]["extraction_resume"]
    assert sweep["ok"] and sweep["where"].startswith("web:")
    assert body["checks"]["maintenance"]["scheduler"] == {"mode": "sweep" if SERVICE_PROFILE else "all",
                                                          "in_this_process": True}
