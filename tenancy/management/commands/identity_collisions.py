import json

from django.apps import apps
from django.core.management.base import BaseCommand

from tenancy.collisions import identity_collisions, report_lines


class Command(BaseCommand):
    help = ("List ids (users, org slugs, external ids, entity ids) that differ only by case, accents or width, "
            "per org: the database's old case/accent-insensitive comparison treated each group as one "
            "(docs/security.md, 'Identity is exact'). Reads only.")

    def add_arguments(self, parser):
        parser.add_argument("--json", action="store_true", dest="as_json", help="One JSON document instead of text.")

    def handle(self, *args, as_json: bool = False, **options):
        collisions = identity_collisions(apps)
        if as_json:
            self.stdout.write(_dumps([c.__dict__ for c in collisions]))
            return
        for line in report_lines(collisions):
            self.stdout.write(line)


def _dumps(value) -> str:
    return json.dumps(value, ensure_ascii=False, indent=1)
