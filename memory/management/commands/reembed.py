from django.core.management.base import BaseCommand, CommandError

from memory.management.projection_runs import ENQUEUE_HELP, progress_bar
from memory.vector_index import VectorIndexUnavailable


class Command(BaseCommand):
    help = ("Embed every active memory with another model into a new collection, then switch recall and "
            "writes to it atomically. The old collection keeps serving until the switch and is kept, retired.")

    def add_arguments(self, parser):
        parser.add_argument("--model", required=True,
                            help="use-multilingual, minilm, or a sentence-transformers model path.")
        parser.add_argument("--batch", type=int, default=256)
        parser.add_argument("--optimize", action="store_true",
                            help="Build the HNSW index before the switch. On the embedded shard this blocks every "
                                 "collection, the live one included, while it runs (minutes at 100k points).")
        parser.add_argument("--enqueue", action="store_true", help=ENQUEUE_HELP)

    def handle(self, *args, model: str, batch: int, optimize: bool, enqueue: bool, **options):
        from memory.projections.reembed import reembed

        if enqueue:
            from memory.tasks import reembed_task

            result = reembed_task.delay(model, batch, optimize)
            self.stdout.write(f"queued {result.id}")
            return

        with progress_bar(self, options["verbosity"]) as progress:
            try:
                counts = reembed(model=model, progress=progress, batch=batch, optimize=optimize)
            except VectorIndexUnavailable as exc:
                raise CommandError(f"vector index unavailable: {exc}") from exc
            except ValueError as exc:  # dimension mismatch, model already live
                raise CommandError(str(exc)) from exc
        for key, value in counts.items():
            self.stdout.write(f"{key:<10} {value}")
