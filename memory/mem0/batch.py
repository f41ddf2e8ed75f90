"""batch_update / batch_delete of the Mem0 surface (`PUT` / `DELETE /v1/batch/`)."""
from django.db import transaction
from django.http import Http404
from rest_framework.exceptions import NotFound
from rest_framework.response import Response

from memory.choices import ForgetRequestStatus, MemoryStatus
from memory.mem0 import serializers as s
from memory.mem0.views import Mem0Api, _actor, _forget_answer, _load, _update
from memory.models import Memory
from memory.services.forget import forget_request_create


class BatchApi(Mem0Api):
    """batch_update / batch_delete: every id is checked before anything changes; updates commit together."""

    def _load_all(self, request, items: list[dict]) -> list[Memory]:
        memories = []
        for i, item in enumerate(items):
            try:
                memories.append(_load(request, item["memory_id"]))
            except Http404:
                raise NotFound(f"memories[{i}].memory_id: not found.")
        return memories

    def put(self, request):
        items = self.validated(s.BatchUpdateInputSerializer, request.data)["memories"]
        memories = self._load_all(request, items)
        for i, memory in enumerate(memories):
            if memory.status != MemoryStatus.ACTIVE:
                return Response({"detail": f"memories[{i}]: memory is {memory.status}; only active memories can be "
                                           "updated. Nothing was changed."}, status=409)
        try:
            with transaction.atomic():
                for memory, item in zip(memories, items):
                    _update(request, memory, item)
        except ValueError:
            return Response({"detail": "A memory is no longer active. Nothing was changed."}, status=409)
        return Response({"message": f"Successfully updated {len(items)} memories."})

    def delete(self, request):
        items = self.validated(s.BatchDeleteInputSerializer, request.data)["memories"]
        by_owner: dict[str, list[int]] = {}
        for memory in self._load_all(request, items):
            by_owner.setdefault(memory.user_id, []).append(memory.id)
        requests = [forget_request_create(org=request.user.org, subject_user=owner, requested_by=_actor(request, owner),
                                          target="memory", memory_ids=ids, include_messages=False, via="api",
                                          execute_inline=True) for owner, ids in sorted(by_owner.items())]
        pending = [r for r in requests if r.status != ForgetRequestStatus.EXECUTED]
        if pending:
            return _forget_answer(pending[0], "")
        return Response({"message": f"Successfully deleted {sum(map(len, by_owner.values()))} memories."})
