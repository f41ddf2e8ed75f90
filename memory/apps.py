from django.apps import AppConfig


class MemoryConfig(AppConfig):
    name = "memory"
    verbose_name = "Long-term memory"

    def ready(self) -> None:
        # conversations never imports memory: an appended message reaches extraction through this signal.
        from conversations.signals import messages_appended
        from memory import receivers

        messages_appended.connect(receivers.on_messages_appended, dispatch_uid="memory.extract_on_append")
        # A write's generation bump rebuilds that user's recall snapshot off the request path.
        from memory.cache import generation_bumped

        generation_bumped.connect(receivers.on_generation_bumped, dispatch_uid="memory.refresh_snapshot")
