from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from memory.vector_index import VectorIndexUnavailable

ENQUEUE_HELP = ("Queue the run for the process that owns the vector index (on a single node with the embedded "
                "shard, the web process consuming CELERY_VECTOR_QUEUE) instead of running it here.")


class Command(BaseCommand):
    help = ("Re-project every active memory into the live vector collection from MySQL (stored vectors; "
            "encodes only what is missing), delete orphan points and record projected_version.")

    def add_arguments(self, parser):
        parser.add_argument("--batch", type=int, default=500)
        parser.add_argument("--no-optimize", action="store_true",
                            help="Skip building the vector index after the load (embedded shard).")
        parser.add_argument("--enqueue", action="store_true", help=ENQUEUE_HELP)

    def handle(self, *args, batch: int, no_optimize: bool, enqueue: bool, **options):
        from memory.maintenance import projections_rebuild

        if enqueue:
            from memory.tasks import projections_rebuild_task

            result = projections_rebuild_task.delay(batch, not no_optimize)
            self.stdout.write(f"queued {result.id}")
            return

        with tqdm(total=0, unit="mem", file=self.stderr, disable=options["verbosity"] == 0) as bar:
            def progress(done: int, total: int) -> None:
                bar.total = total
                bar.update(done - bar.n)

            try:
                counts = projections_rebuild(progress=progress, batch=batch, optimize=not no_optimize)
            except VectorIndexUnavailable as exc:
                raise CommandError(f"vector index unavailable: {exc}") from exc
        for key, value in counts.items():
            self.stdout.write(f"{key:<16} {value}")
