"""Read-only queries behind the console's pages: the health page's counts and the previews of the
forget-user and purge-org actions."""
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from datetime import timezone as dt_timezone

from django.db.models import Count
from django.db.models.functions import TruncDate
from django.utils import timezone

from conversations.models import Conversation, Message
from memory.choices import ForgetRequestStatus, MemoryStatus
from memory.models import ForgetRequest, Memory
from tenancy.models import Org

STATUSES = MemoryStatus.values


def org_counts(*, orgs: list[Org]) -> list[dict]:
    """Per org: memories by status, conversations, messages. Three grouped queries for the whole page."""
    ids = [o.id for o in orgs]
    by_status: dict[int, dict[str, int]] = {i: dict.fromkeys(STATUSES, 0) for i in ids}
    for row in Memory.objects.filter(org_id__in=ids).order_by().values("org_id", "status").annotate(n=Count("id")):
        by_status[row["org_id"]][row["status"]] = row["n"]
    conversations = dict(Conversation.objects.filter(org_id__in=ids).order_by().values("org_id")
                         .annotate(n=Count("id")).values_list("org_id", "n"))
    messages = dict(Message.objects.filter(org_id__in=ids).order_by().values("org_id")
                    .annotate(n=Count("id")).values_list("org_id", "n"))
    return [{"org": o, "memories": [by_status[o.id][s] for s in STATUSES], "total": sum(by_status[o.id].values()),
             "conversations": conversations.get(o.id, 0), "messages": messages.get(o.id, 0)} for o in orgs]


def user_forget_preview(*, org: Org, user_id: str) -> list[tuple[str, object]]:
    """What forgetting a whole user would touch, as (label, value) rows for the confirmation page."""
    by_status = dict(Memory.objects.filter(org=org, user_id=user_id).order_by().values("status")
                     .annotate(n=Count("id")).values_list("status", "n"))
    conversations = Conversation.objects.filter(org=org, owner_user=user_id)
    return [("org", org.slug), ("user", user_id),
            ("memories", ", ".join(f"{s}: {n}" for s, n in sorted(by_status.items())) or "none"),
            ("conversations owned", conversations.count()),
            ("messages in them (will be redacted)", Message.objects.filter(conversation__in=conversations).count()),
            ("pending forget requests for this user",
             ForgetRequest.objects.filter(org=org, subject_user=user_id, status=ForgetRequestStatus.PENDING).count())]


def org_purge_preview(*, org: Org) -> list[tuple[str, object]]:
    """What purging an org would delete, as (label, value) rows for the confirmation page."""
    return [("org", f"{org.slug} ({org.name})"), ("memories", Memory.objects.filter(org=org).count()),
            ("conversations", Conversation.objects.filter(org=org).count()),
            ("messages", Message.objects.filter(org=org).count()), ("API keys", org.api_keys.count())]


def memory_growth(*, days: int = 30, org: Org | None = None) -> list[tuple[date, int]]:
    """Memories created per day (UTC) over the last `days` days, zero-filled."""
    today = timezone.now().date()
    start = today - timedelta(days=days - 1)
    qs = Memory.objects.filter(created_at__gte=datetime.combine(start, time.min, tzinfo=dt_timezone.utc))
    if org is not None:
        qs = qs.filter(org=org)
    counts = {row["day"]: row["n"] for row in qs.annotate(day=TruncDate("created_at")).order_by()
              .values("day").annotate(n=Count("id"))}
    return [(start + timedelta(days=i), counts.get(start + timedelta(days=i), 0)) for i in range(days)]


@dataclass
class Bar:
    x: float
    y: float
    width: float
    height: float
    label: str
    value: float


def bar_chart(points: list[tuple[str, float]], *, width: int = 720, height: int = 160) -> dict:
    """Geometry of a plain SVG bar chart (numbers only; labels are escaped by the template)."""
    top = max((v for _, v in points), default=0) or 1
    step = width / max(1, len(points))
    bars = [Bar(x=round(i * step + 1, 1), y=round(height - v / top * height, 1), width=round(max(1.0, step - 2), 1),
                height=round(v / top * height, 1), label=label, value=v) for i, (label, v) in enumerate(points)]
    return {"bars": bars, "width": width, "height": height, "max": top}
