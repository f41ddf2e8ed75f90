from django.core.management.base import BaseCommand, CommandError

from memory.management.projection_runs import ENQUEUE_HELP, progress_bar
from memory.vector_index import VectorIndexUnavailable


class Command(BaseCommand):
    help = ("Re-project every active memory into the live vector collection from MySQL (stored vectors; "
            "encodes only what is missing), delete orphan points and record projected_version.")

    def add_arguments(self, parser):
        parser.add_argument("--batch", type=int, default=500)
        parser.add_argument("--no-optimize", action="store_true",
                            help="Skip building the vector index after the load (embedded shard).")
        parser.add_argument("--enqueue", action="store_true", help=ENQUEUE_HELP)

    def handle(self, *args, batch: int, no_optimize: bool, enqueue: bool, **options):
        from memory.projections.rebuild import projections_rebuild

        if enqueue:
            from memory.tasks import projections_rebuild_task

            result = projections_rebuild_task.delay(batch, not no_optimize)
            self.stdout.write(f"queued {result.id}")
            return

        with progress_bar(self, options["verbosity"]) as progress:
            try:
                counts = projections_rebuild(progress=progress, batch=batch, optimize=not no_optimize)
            except VectorIndexUnavailable as exc:
                raise CommandError(f"vector index unavailable: {exc}") from exc
        for key, value in counts.items():
            self.stdout.write(f"{key:<16} {value}")
