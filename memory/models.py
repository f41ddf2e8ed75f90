from django.db import models

from conversations.models import Conversation, Message
from entities.models import Entity
from memory.choices import (
    CollectionState,
    ConflictStatus,
    ForgetRequestStatus,
    MemoryAssertion,
    MemoryKind,
    MemoryScope,
    MemoryStatus,
)
from tenancy.identifiers import IdentifierField
from tenancy.models import Org


class Memory(models.Model):
    CREATED_BY_CHOICES = [(s, s) for s in ("extractor", "api", "operator")]

    org = models.ForeignKey(Org, on_delete=models.CASCADE, related_name="memories")
    user_id = IdentifierField(max_length=128)
    scope = models.CharField(max_length=10, choices=MemoryScope.choices, default=MemoryScope.USER)
    # Task-scoped memories and episodes belong to one conversation.
    conversation = models.ForeignKey(Conversation, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    kind = models.CharField(max_length=12, choices=MemoryKind.choices)
    assertion = models.CharField(max_length=20, choices=MemoryAssertion.choices, default=MemoryAssertion.USER_STATED)
    slot_key = models.CharField(max_length=200, null=True, blank=True)
    status = models.CharField(max_length=12, choices=MemoryStatus.choices, default=MemoryStatus.ACTIVE)
    content = models.TextField()  # the current version's content (denormalised for search and display)
    content_hash = models.CharField(max_length=64)
    # content_hash while active, NULL otherwise: a unique index on it makes two concurrent writers
    # of the same fact collide in the database instead of leaving two active copies.
    active_hash = models.CharField(max_length=64, null=True, blank=True)
    importance = models.FloatField(default=0.5)
    valid_from = models.DateTimeField(null=True, blank=True)
    valid_to = models.DateTimeField(null=True, blank=True)
    occurred_at = models.DateTimeField(null=True, blank=True)  # the event's time (events, episodes)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField(auto_now=True)
    last_accessed_at = models.DateTimeField(null=True, blank=True)
    access_count = models.PositiveIntegerField(default=0)
    superseded_by = models.ForeignKey("self", on_delete=models.SET_NULL, null=True, blank=True, related_name="supersedes")
    invalidated_at = models.DateTimeField(null=True, blank=True)
    invalid_reason = models.CharField(max_length=50, blank=True)
    created_by = models.CharField(max_length=10, choices=CREATED_BY_CHOICES, default="extractor")
    version = models.PositiveIntegerField(default=1)
    projected_version = models.PositiveIntegerField(default=0)
    # The client's own key/value metadata (the Mem0 surface's `metadata`): kept and returned, never
    # interpreted. Cleared when the memory is forgotten, like its content.
    metadata = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "memories"
        constraints = [
            models.UniqueConstraint(fields=["org", "user_id", "kind", "active_hash"], name="memory_unique_active_content"),
        ]
        indexes = [
            models.Index(fields=["org", "user_id", "status", "kind"]),
            models.Index(fields=["org", "user_id", "slot_key"]),
            models.Index(fields=["status", "projected_version"]),
            models.Index(fields=["updated_at"]),  # re-embed catch-up and reconcile's grace window
            # Everything a recall snapshot reads of a user's active memories, in its order: the build
            # scans this index's run for the user instead of fetching each row from the table (at 1M
            # memories a cold user's 2,000 rows sit on as many pages: memory/recall/snapshot.py).
            models.Index(fields=["org", "user_id", "status", "created_at", "id", "kind", "scope", "conversation",
                                 "valid_from", "valid_to", "occurred_at", "importance", "access_count",
                                 "content_hash", "version"], name="memory_recall_snapshot_idx"),
        ]

    def __str__(self) -> str:
        return f"memory {self.id} v{self.version} {self.kind} {self.status}"

    @property
    def is_episode(self) -> bool:
        return self.kind == MemoryKind.EPISODE


class MemoryVersion(models.Model):
    REASONS = [(r, r) for r in ("ADD", "UPDATE", "SUPERSEDE", "CORRECT", "REDACT")]

    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="versions")
    n = models.PositiveIntegerField()
    content = models.TextField()
    content_hash = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.CharField(max_length=10, choices=Memory.CREATED_BY_CHOICES)
    actor = models.CharField(max_length=200, blank=True)
    reason = models.CharField(max_length=10, choices=REASONS)
    redacted = models.BooleanField(default=False)

    class Meta:
        ordering = ["memory_id", "n"]
        constraints = [models.UniqueConstraint(fields=["memory", "n"], name="memory_version_unique_n")]


class MemorySource(models.Model):
    """Where a memory version came from: a stored message, or an external reference."""

    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="sources")
    version = models.ForeignKey(MemoryVersion, on_delete=models.CASCADE, related_name="sources")
    message = models.ForeignKey(Message, on_delete=models.SET_NULL, null=True, blank=True, related_name="memory_sources")
    conversation = models.ForeignKey(Conversation, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    external_ref = IdentifierField(max_length=200, null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["memory", "conversation"])]


class EntityLink(models.Model):
    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="entity_links")
    entity = models.ForeignKey(Entity, on_delete=models.CASCADE, related_name="memory_links")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["memory", "entity"], name="entity_link_unique")]


class ForgetRule(models.Model):
    """Blocks re-extraction of forgotten content. Holds fingerprints only, never the forgotten text."""

    org = models.ForeignKey(Org, on_delete=models.CASCADE, related_name="+")
    user_id = IdentifierField(max_length=128, null=True, blank=True)  # null: applies to the whole org
    fingerprint = models.CharField(max_length=64, db_index=True)  # normalised-content hash
    embedding = models.BinaryField(null=True, blank=True)  # float32 vector of the forgotten content
    embedding_model = models.CharField(max_length=100, blank=True)
    slot_key = models.CharField(max_length=200, null=True, blank=True)
    entity = models.ForeignKey(Entity, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    request = models.ForeignKey("ForgetRequest", on_delete=models.SET_NULL, null=True, blank=True, related_name="rules")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["org", "user_id"])]


class ForgetRequest(models.Model):
    TARGETS = [(t, t) for t in ("memory", "query", "user", "org")]

    org = models.ForeignKey(Org, on_delete=models.CASCADE, related_name="forget_requests")
    subject_user = IdentifierField(max_length=128, blank=True)  # whose memories
    requested_by = models.CharField(max_length=200)
    requested_via = models.CharField(max_length=10, default="api")  # api | console
    target = models.CharField(max_length=10, choices=TARGETS)
    memory = models.ForeignKey(Memory, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    # For "query" targets the query text is kept only until execution, then cleared.
    query = models.TextField(blank=True)
    matched_ids = models.JSONField(default=list, blank=True)  # the preview the user confirmed
    include_messages = models.BooleanField(default=False)
    status = models.CharField(max_length=10, choices=ForgetRequestStatus.choices, default=ForgetRequestStatus.PENDING)
    operator = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    executed_at = models.DateTimeField(null=True, blank=True)
    result = models.JSONField(default=dict, blank=True)  # counts only

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["org", "status"])]
        # Deciding is its own permission: a read-only operator may see requests, not approve them.
        permissions = [("approve_forgetrequest", "Can approve or reject forget requests")]

    def __str__(self) -> str:
        return f"forget request {self.id} ({self.target}, {self.status})"


class MemoryWriteLock(models.Model):
    """One row per (org, user): extraction workers lock it so semantic dedup and supersede
    decisions for one user are serialised (two workers on one fact never both ADD)."""

    org = models.ForeignKey(Org, on_delete=models.CASCADE, related_name="+")
    user_id = IdentifierField(max_length=128)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["org", "user_id"], name="memory_write_lock_unique")]


class MemoryCacheEpoch(models.Model):
    """One row per (org, user) whose Redis hash of standing memories could not be updated: the hash
    key carries the epoch, and a failed hash write bumps it here, in the system of record, because
    an unreachable Redis cannot be told. The hash that missed the write is then never read again by
    any process, and the next read refills a new one from MySQL (memory/cache.py). No row = epoch 0."""

    org = models.ForeignKey(Org, on_delete=models.CASCADE, related_name="+")
    user_id = IdentifierField(max_length=128)
    epoch = models.BigIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["org", "user_id"], name="memory_cache_epoch_unique")]


class MemoryEmbedding(models.Model):
    """The memory's vector under one embedding model, kept in the system of record so that dedup in a
    worker never needs the vector index, and projections can be rebuilt without re-encoding."""

    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="embeddings")
    model_id = models.CharField(max_length=100)
    version = models.PositiveIntegerField()  # the memory version this vector encodes
    vector = models.BinaryField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["memory", "model_id"], name="memory_embedding_unique_model")]


class MemoryTerms(models.Model):
    """What the read path needs of a memory's text (memory/recall/keyword.py), read once by the projection
    sync and kept beside its vectors, so that building a user's keyword index and ranking candidates
    never segments or tags a text (jieba is ~0.1 ms per memory, its tagger ~0.3 ms). A projection:
    deleted with the content on forget, rebuildable; `tokenizer` names the analyser that produced
    it, and rows of another version or analyser are ignored (the read path reads the text instead)."""

    memory = models.OneToOneField(Memory, on_delete=models.CASCADE, primary_key=True, related_name="terms")
    # The memory's owner, copied so a user's rows are one index range (migration 0011: on SQLite the
    # index covers every column, so a snapshot build reads them without visiting the table).
    org = models.ForeignKey(Org, on_delete=models.CASCADE, null=True, db_index=False, related_name="+")
    user_id = IdentifierField(max_length=128, null=True)
    version = models.PositiveIntegerField()  # the memory version these terms were read from
    tokenizer = models.CharField(max_length=40)
    hashes = models.BinaryField(default=b"")  # the terms in order, as little-endian 64-bit hashes
    cjk = models.BooleanField(default=False)  # mostly Chinese: only the multilingual half scores it
    small_talk = models.BooleanField(default=False)  # no content word by part of speech
    speaker = models.CharField(max_length=100, blank=True, default="")  # a transcript line's speaker label


LIVE_CACHE_SECONDS = 2.0
_LIVE_CACHE: dict = {}
# What a point's payload holds, by version: 1 the memory's org and user_id as two fields; 2 also their
# pair as one `owner` field, so a search of one user's points has one selective condition (memory/vectors.py).
PAYLOAD_VERSION = 2


class VectorCollection(models.Model):
    """One vector collection per embedding model; exactly one is live. Re-embedding builds a new
    one in the background and switches the live pointer atomically (DB row + index alias)."""

    name = models.CharField(max_length=200, unique=True)
    model_name = models.CharField(max_length=300)  # what get_embedder() loads
    model_id = models.CharField(max_length=100)
    dim = models.PositiveIntegerField()
    state = models.CharField(max_length=10, choices=CollectionState.choices, default=CollectionState.BUILDING)
    created_at = models.DateTimeField(auto_now_add=True)
    switched_at = models.DateTimeField(null=True, blank=True)
    # The payload version every point of the collection carries (PAYLOAD_VERSION when it was created or
    # last rebuilt from MySQL); searches use only the fields that version has.
    payload_version = models.PositiveSmallIntegerField(default=PAYLOAD_VERSION)

    def __str__(self) -> str:
        return f"{self.name} ({self.state})"

    @classmethod
    def live(cls, *, fresh: bool = False) -> "VectorCollection | None":
        """The live collection. Read on every recall and write, so kept in process for a couple of
        seconds; a switch (reembed) clears it here and other processes follow within the TTL."""
        import time

        now = time.monotonic()
        cached = _LIVE_CACHE.get("row")
        if not fresh and cached is not None and now - cached[0] < LIVE_CACHE_SECONDS:
            return cached[1]
        row = cls.objects.filter(state=CollectionState.LIVE).first()
        _LIVE_CACHE["row"] = (now, row)
        return row

    @classmethod
    def forget_cached_live(cls) -> None:
        _LIVE_CACHE.clear()

    @classmethod
    def ensure_live(cls, *, model_name: str, model_id: str, dim: int, name: str) -> "VectorCollection":
        from django.db import IntegrityError, transaction

        try:
            with transaction.atomic():
                row, _ = cls.objects.get_or_create(name=name, defaults={"model_name": model_name, "model_id": model_id,
                                                                       "dim": dim, "state": CollectionState.LIVE})
        except IntegrityError:
            row = cls.objects.get(name=name)
        if not cls.objects.filter(state=CollectionState.LIVE).exists():
            cls.objects.filter(id=row.id).update(state=CollectionState.LIVE)
            row.state = CollectionState.LIVE
        cls.forget_cached_live()
        return cls.live(fresh=True)


class MemoryConflict(models.Model):
    """Two active standing memories of one user that may say different things about one subject.
    Written by the write path when subject matching is uncertain (both kept, the newer ranks first);
    an operator resolves it: supersede the older, or keep both. Holds ids and scores, never text."""

    org = models.ForeignKey(Org, on_delete=models.CASCADE, related_name="+")
    user_id = IdentifierField(max_length=128)
    older = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="conflicts_as_older")
    newer = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="conflicts_as_newer")
    score = models.FloatField(default=0.0)  # subject similarity that put the pair in the uncertain band
    signals = models.JSONField(default=dict, blank=True)  # the score parts, for explain and the console
    status = models.CharField(max_length=12, choices=ConflictStatus.choices, default=ConflictStatus.OPEN)
    created_at = models.DateTimeField(auto_now_add=True)
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolved_by = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["older", "newer"], name="memory_conflict_unique_pair")]
        indexes = [models.Index(fields=["org", "status"]), models.Index(fields=["org", "user_id", "status"])]
        permissions = [("resolve_memoryconflict", "Can resolve memory conflicts")]

    def __str__(self) -> str:
        return f"conflict {self.id} ({self.older_id} vs {self.newer_id}, {self.status})"


class Mem0AddEvent(models.Model):
    """One `POST /v3/memories/add/` of the Mem0-compatible surface (memory/mem0/). Its messages and
    explicit memories carry `external_ref = "mem0:<event_id>"`, so the event's status and results
    are read from the system of record; this row only keeps who added it and the metadata that
    extraction attaches to what it derives. Holds no message text."""

    event_id = models.UUIDField(unique=True)
    org = models.ForeignKey(Org, on_delete=models.CASCADE, related_name="+")
    user_id = IdentifierField(max_length=128)
    conversation = models.ForeignKey(Conversation, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    infer = models.BooleanField(default=True)
    metadata = models.JSONField(default=dict, blank=True)
    message_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["org", "user_id"])]

    @property
    def ref(self) -> str:
        return f"mem0:{self.event_id}"
