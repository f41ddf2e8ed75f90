from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = ("Send open possible conflicts and memories in the gate's uncertain band to the configured LLM "
            "once (D28; beat or the maintenance scheduler does it every LLM_REVIEW_EVERY_MINUTES). "
            "Without an LLM configured nothing is sent or queued.")

    def add_arguments(self, parser):
        parser.add_argument("--enqueue", action="store_true", help="Queue the run for a worker instead of running here.")

    def handle(self, *args, enqueue: bool, **options):
        from memory.enqueue import llm_review_enqueue
        from memory.services.llm_review import llm_review_configured, llm_review_run

        if not llm_review_configured():
            self.stdout.write("no LLM configured (LLM_BASE_URL empty or LLM_REVIEW_ENABLED off): nothing to do")
            return
        if enqueue:
            self.stdout.write("queued" if llm_review_enqueue() else "not queued: the broker did not answer")
            return
        for key, value in sorted(llm_review_run().items()):
            self.stdout.write(f"{key}: {value}")
