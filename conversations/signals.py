from django.dispatch import Signal

# Sent after the appending transaction commits, with org_id and message_ids (ids only).
messages_appended = Signal()
