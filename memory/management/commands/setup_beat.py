from django.core.management.base import BaseCommand

from memory.jobs.beat_schedule import ensure_beat_schedule


class Command(BaseCommand):
    help = "Create or update the periodic jobs (django-celery-beat rows): reconcile, resume, expire, evict."

    def handle(self, *args, **options):
        for name in ensure_beat_schedule():
            self.stdout.write(name)
