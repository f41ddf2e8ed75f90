from django.core.management.base import BaseCommand, CommandError

from memory.management.projection_runs import ENQUEUE_HELP
from memory.vector_index import VectorIndexUnavailable


class Command(BaseCommand):
    help = ("Compare MySQL with the vector index (missing, stale and orphan points) and fix the drift. "
            "With the embedded shard open in the web process, use --enqueue.")

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="Report only; change nothing.")
        parser.add_argument("--collection", default=None, help="A collection other than the live one.")
        parser.add_argument("--grace-seconds", type=int, default=0,
                            help="Leave rows written this recently to their own projection tasks.")
        parser.add_argument("--enqueue", action="store_true", help=ENQUEUE_HELP)

    def handle(self, *args, dry_run: bool, collection: str | None, grace_seconds: int, enqueue: bool, **options):
        from memory.maintenance import projections_reconcile
        from memory.models import VectorCollection

        if enqueue:
            from memory.tasks import projections_reconcile_task

            result = projections_reconcile_task.delay(collection, not dry_run)
            self.stdout.write(f"queued {result.id}")
            return

        try:
            counts = projections_reconcile(collection=collection, fix=not dry_run, grace_seconds=grace_seconds)
        except VectorIndexUnavailable as exc:
            raise CommandError(f"vector index unavailable: {exc}") from exc
        except VectorCollection.DoesNotExist as exc:
            raise CommandError(f"no such collection: {collection}") from exc
        for key in ("collection", "checked", "points", "missing", "stale", "orphan", "fixed"):
            self.stdout.write(f"{key:<10} {counts[key]}")
        if dry_run:
            self.stdout.write("dry run: nothing changed")
