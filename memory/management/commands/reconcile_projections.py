import time

from django.core.management.base import BaseCommand, CommandError

from memory.management.projection_runs import ENQUEUE_HELP
from memory.vector_index import VectorIndexUnavailable

COUNT_KEYS = ("collection", "checked", "points", "missing", "stale", "orphan", "fixed")
SINGLE_NODE_HINT = ("The vector index cannot be opened here: on a single node the web process holds the embedded "
                    "shard. Run the reconcile there and wait for its report:\n"
                    "  python manage.py reconcile_projections {dry}--enqueue --wait 120")


class Command(BaseCommand):
    help = ("Compare MySQL with the vector index (missing, stale and orphan points) and fix the drift. "
            "With the embedded shard open in the web process, use --enqueue (and --wait for its report).")

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="Report only; change nothing.")
        parser.add_argument("--collection", default=None, help="A collection other than the live one.")
        parser.add_argument("--grace-seconds", type=int, default=0,
                            help="Leave rows written this recently to their own projection tasks.")
        parser.add_argument("--enqueue", action="store_true", help=ENQUEUE_HELP)
        parser.add_argument("--wait", type=float, default=0, metavar="SECONDS",
                            help="With --enqueue: wait up to this long for the queued run and print its report "
                                 "(read from the run record the process that ran it keeps in the shared cache).")

    def handle(self, *args, dry_run: bool, collection: str | None, grace_seconds: int, enqueue: bool, wait: float,
               **options):
        from memory.models import VectorCollection
        from memory.projections.reconcile import projections_reconcile

        if enqueue:
            return self._enqueue(collection, dry_run, wait)

        try:
            counts = projections_reconcile(collection=collection, fix=not dry_run, grace_seconds=grace_seconds)
        except VectorIndexUnavailable as exc:
            if not dry_run:
                raise CommandError(f"vector index unavailable: {exc}\n" + SINGLE_NODE_HINT.format(dry="")) from exc
            self._report_from_mysql(exc)
            return
        except VectorCollection.DoesNotExist as exc:
            raise CommandError(f"no such collection: {collection}") from exc
        self._print(counts)
        if dry_run:
            self.stdout.write("dry run: nothing changed")

    def _print(self, counts: dict) -> None:
        for key in COUNT_KEYS:
            if key in counts:
                self.stdout.write(f"{key:<10} {counts[key]}")

    def _report_from_mysql(self, exc: Exception) -> None:
        """A dry run where the index cannot be opened: what MySQL alone says (rows whose projection has
        not landed), and how to get the full comparison."""
        from django.db.models import Count, F

        from memory.models import Memory

        by_status = dict(Memory.objects.filter(projected_version__lt=F("version")).values("status")
                         .annotate(n=Count("id")).values_list("status", "n"))
        self.stdout.write(f"vector index unavailable here ({exc}); from MySQL alone:")
        self.stdout.write(f"{'lagging':<10} {sum(by_status.values())}  (projected_version < version; "
                          + ", ".join(f"{status} {n}" for status, n in sorted(by_status.items())) + ")")
        self.stdout.write("missing, stale and orphan points need the index.")
        self.stdout.write(SINGLE_NODE_HINT.format(dry="--dry-run "))
        self.stdout.write("dry run: nothing changed")

    def _enqueue(self, collection: str | None, dry_run: bool, wait: float) -> None:
        from django.utils import timezone

        from memory.jobs.run_records import maintenance_runs
        from memory.tasks import projections_reconcile_task

        queued_at = timezone.now().isoformat()
        result = projections_reconcile_task.delay(collection, not dry_run)
        self.stdout.write(f"queued {result.id}")
        if not wait:
            return
        deadline = time.monotonic() + wait
        while True:
            run = maintenance_runs().get("projections_reconcile")
            if run and run["last_run_at"] >= queued_at:
                break
            if time.monotonic() > deadline:
                raise CommandError(f"no report within {wait:.0f} s; the run may still be queued or running "
                                   "(see /readyz checks.maintenance.jobs.projections_reconcile)")
            time.sleep(0.5)
        if not run.get("ok"):
            raise CommandError(f"the queued run failed: {run.get('error')}")
        self.stdout.write(f"ran at {run['last_run_at']} in {run.get('where')} ({run.get('seconds')} s)")
        result = run.get("result")
        for key, value in (result.items() if isinstance(result, dict) else [("result", result)]):
            self.stdout.write(f"{key:<10} {value}")
        if dry_run:
            self.stdout.write("dry run: nothing changed")
