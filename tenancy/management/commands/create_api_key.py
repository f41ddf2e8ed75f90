from django.core.management.base import BaseCommand

from tenancy.services import api_key_create, org_get_or_create


class Command(BaseCommand):
    help = "Create an org (if needed) and a new API key for it; the key is printed once."

    def add_arguments(self, parser):
        parser.add_argument("org")
        parser.add_argument("--name", default="default")

    def handle(self, *args, org: str, name: str, **options):
        org_obj = org_get_or_create(slug=org)
        _, raw = api_key_create(org=org_obj, name=name)
        self.stdout.write(raw)
