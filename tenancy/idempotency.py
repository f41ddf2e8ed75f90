"""`Idempotency-Key` for writes: a retried request returns the first answer and stores nothing new.

Scope: (org from the API key, acting user, endpoint = method + path, key). The record is inserted
first, in the same transaction as the write, so the database's unique constraint (not a check then
an insert) settles concurrent duplicates: the second insert waits for the first transaction and
fails once it commits; the second request then answers the stored response. A write that fails
rolls its record back with it, so retrying the same key runs it again. The same key with another
body is refused (422, naming the header). Records older than IDEMPOTENCY_RETENTION_HOURS no longer
count and are purged by `idempotency_records_purge` (beat job; docs/api.md "Retries").
"""
from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from rest_framework.exceptions import APIException, ValidationError
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response

from tenancy.db import retry_on_contention
from tenancy.models import IdempotencyRecord

logger = logging.getLogger(__name__)

HEADER = "Idempotency-Key"
MAX_KEY_CHARS = 255
PURGE_CHUNK = 1000


class IdempotencyKeyReused(APIException):
    status_code = 422
    default_code = "idempotency_key_reused"
    default_detail = {HEADER: [f"This {HEADER} was already used with a different request body on this endpoint; "
                               "send a new key for a new request."]}


class IdempotencyInFlight(APIException):
    status_code = 409
    default_code = "idempotency_key_in_flight"
    default_detail = {HEADER: [f"A request with this {HEADER} is still being processed; retry shortly."]}


class _Taken(Exception):
    pass


def _key(request) -> str | None:
    raw = request.headers.get(HEADER)
    if raw is None:
        return None
    if not raw or len(raw) > MAX_KEY_CHARS or not raw.isascii() or not raw.isprintable():
        raise ValidationError({HEADER: [f"Give 1 to {MAX_KEY_CHARS} printable ASCII characters (e.g. a UUID)."]})
    return raw


def _fingerprint(data) -> str:
    canonical = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _cutoff():
    return timezone.now() - timedelta(hours=settings.IDEMPOTENCY_RETENTION_HOURS)


def idempotent(request, handler: Callable[[], Response]) -> Response:
    """Run `handler` (the view's write) at most once per key; replay its answer for repeats."""
    key = _key(request)
    if key is None:
        return handler()
    scope = {"org": request.user.org, "user_id": request.user.user_id,
             "endpoint": f"{request.method} {request.path}"[:200], "key": key}
    fingerprint = _fingerprint(request.data)
    # The claim and the write are one transaction, retried as a whole on lock contention (a retry
    # inside it could not run: the failed statement has broken the enclosing transaction).
    @retry_on_contention
    def attempt() -> Response:
        with transaction.atomic():
            try:
                with transaction.atomic():
                    record = IdempotencyRecord.objects.create(**scope, fingerprint=fingerprint,
                                                              created_at=timezone.now())
            except IntegrityError:
                raise _Taken from None
            response = handler()
            if response.status_code >= 400:  # an error answer stores nothing, the key included
                transaction.set_rollback(True)
                return response
            # Stored as the client received it (rendered JSON), so a replay is byte-for-byte the same data.
            record.status_code = response.status_code
            record.body = json.loads(JSONRenderer().render(response.data)) if response.data is not None else None
            record.save(update_fields=["status_code", "body"])
            return response

    for _ in range(3):
        try:
            return attempt()
        except _Taken:
            pass
        # The first request has committed (a rolled-back one leaves nothing and the loop claims again).
        existing = IdempotencyRecord.objects.filter(**scope).first()
        if existing is None:
            continue
        if existing.created_at < _cutoff():
            IdempotencyRecord.objects.filter(id=existing.id).delete()  # expired, not yet purged
            continue
        if existing.fingerprint != fingerprint:
            raise IdempotencyKeyReused()
        if existing.status_code is None:
            raise IdempotencyInFlight()
        logger.info("idempotent replay endpoint=%s record=%s", scope["endpoint"], existing.id)
        return Response(existing.body, status=existing.status_code, headers={"Idempotent-Replayed": "true"})
    raise IdempotencyInFlight()


def idempotency_records_purge(*, now=None) -> int:
    """Delete records older than the retention window, in chunks (a periodic job)."""
    cutoff = (now or timezone.now()) - timedelta(hours=settings.IDEMPOTENCY_RETENTION_HOURS)
    deleted = 0
    while True:
        ids = list(IdempotencyRecord.objects.filter(created_at__lt=cutoff).values_list("id", flat=True)[:PURGE_CHUNK])
        if not ids:
            return deleted
        deleted += IdempotencyRecord.objects.filter(id__in=ids).delete()[0]
