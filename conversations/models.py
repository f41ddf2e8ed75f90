from django.db import models

from entities.models import Entity
from tenancy.identifiers import IdentifierField
from tenancy.models import Org


class Conversation(models.Model):
    org = models.ForeignKey(Org, on_delete=models.CASCADE, related_name="conversations")
    owner_user = IdentifierField(max_length=128)
    # The client's own id for the conversation (session id), unique per org when given.
    external_id = IdentifierField(max_length=200, null=True, blank=True)
    title = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    message_count = models.PositiveIntegerField(default=0)
    # Bumped when message text is redacted: names the current recent-window cache list, so a list
    # holding redacted text is never read again even if Redis could not be reached to delete it.
    window_version = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["org", "external_id"], name="conversation_unique_org_external_id"),
        ]
        indexes = [models.Index(fields=["org", "owner_user"])]

    def __str__(self) -> str:
        return f"conversation {self.id} ({self.external_id or '-'})"


class ConversationAccess(models.Model):
    """Per-user read access to a conversation. The owner reads it unless a revoked row exists;
    other users read it only with a granted row."""

    class State(models.TextChoices):
        GRANTED = "granted", "granted"
        REVOKED = "revoked", "revoked"

    GRANTED, REVOKED = State.GRANTED, State.REVOKED
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="access")
    user_id = IdentifierField(max_length=128)
    state = models.CharField(max_length=8, choices=State.choices)
    changed_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["conversation", "user_id"], name="conversation_access_unique")]
        indexes = [models.Index(fields=["user_id", "state"])]


class Message(models.Model):
    ROLES = [("user", "user"), ("assistant", "assistant"), ("tool", "tool"), ("system", "system")]

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="messages")
    org = models.ForeignKey(Org, on_delete=models.CASCADE, related_name="+")
    user_id = IdentifierField(max_length=128)  # the acting user who appended it
    seq = models.PositiveIntegerField()  # position in the conversation, 1-based
    role = models.CharField(max_length=10, choices=ROLES)
    content = models.TextField(blank=True)
    tool_call_id = models.CharField(max_length=200, null=True, blank=True)
    tool_calls = models.JSONField(null=True, blank=True)
    token_count = models.PositiveIntegerField(default=0)
    occurred_at = models.DateTimeField()
    external_ref = IdentifierField(max_length=200, null=True, blank=True)
    redacted = models.BooleanField(default=False)
    # The user asked not to remember this turn: no memory is extracted and it is no episode.
    do_not_remember = models.BooleanField(default=False)
    extracted_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["conversation_id", "seq"]
        constraints = [models.UniqueConstraint(fields=["conversation", "seq"], name="message_unique_seq")]
        indexes = [
            models.Index(fields=["org", "external_ref"]),
            models.Index(fields=["org", "user_id", "occurred_at"]),
            # Pending extraction (extracted_at NULL) and the age of the oldest: the sweep and /readyz
            # read them every few seconds, so they must not scan every message.
            models.Index(fields=["extracted_at", "created_at"], name="message_pending_extraction"),
        ]

    def __str__(self) -> str:
        return f"message {self.id} #{self.seq} {self.role}"


class HistorySummary(models.Model):
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="summaries")
    covers_until_seq = models.PositiveIntegerField()
    text = models.TextField()
    token_count = models.PositiveIntegerField(default=0)
    produced_by = models.CharField(max_length=100)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["conversation_id", "-covers_until_seq"]
        verbose_name_plural = "history summaries"
        indexes = [models.Index(fields=["conversation", "covers_until_seq"])]


class TaskState(models.Model):
    KINDS = [("plan", "plan"), ("draft", "draft"), ("confirmation", "confirmation"), ("result", "result"),
             ("other", "other")]

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="task_states")
    key = IdentifierField(max_length=200)
    kind = models.CharField(max_length=20, choices=KINDS, default="other")
    state = models.CharField(max_length=100)
    data = models.JSONField(default=dict, blank=True)
    version = models.PositiveIntegerField(default=1)
    updated_at = models.DateTimeField(auto_now=True)
    updated_by = models.CharField(max_length=128, blank=True)

    class Meta:
        ordering = ["conversation_id", "key"]
        constraints = [models.UniqueConstraint(fields=["conversation", "key"], name="task_state_unique_key")]


class EntityMention(models.Model):
    """An entity named in a message. Kept here, with the messages, so `entities` imports neither app."""

    entity = models.ForeignKey(Entity, on_delete=models.CASCADE, related_name="mentions")
    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="mentions")
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="+")
    user_id = IdentifierField(max_length=128)
    surface = models.CharField(max_length=300, blank=True)
    at = models.DateTimeField()

    class Meta:
        ordering = ["-at", "-id"]
        constraints = [models.UniqueConstraint(fields=["entity", "message"], name="mention_unique_entity_message")]
        indexes = [models.Index(fields=["user_id", "at"]), models.Index(fields=["conversation", "at"])]
