from django.core.management.base import BaseCommand, CommandError

from tenancy.models import API_KEY_SCOPES, SCOPE_MEM0_COMPAT
from tenancy.services import api_key_create, org_get_or_create


class Command(BaseCommand):
    help = "Create an org (if needed) and a new API key for it; the key is printed once."

    def add_arguments(self, parser):
        parser.add_argument("org")
        parser.add_argument("--name", default="default")
        parser.add_argument("--scope", action="append", default=[], dest="scopes",
                            help=f"Grant a scope (repeatable): {', '.join(API_KEY_SCOPES)}.")
        parser.add_argument("--mem0-compat", action="store_true",
                            help=f"Shorthand for --scope {SCOPE_MEM0_COMPAT}: the key may name the acting user "
                                 "in Mem0 request bodies (docs/mem0.md).")

    def handle(self, *args, org: str, name: str, scopes: list[str], mem0_compat: bool, **options):
        if mem0_compat:
            scopes = [*scopes, SCOPE_MEM0_COMPAT]
        unknown = sorted(set(scopes) - set(API_KEY_SCOPES))
        if unknown:
            raise CommandError(f"Unknown scope(s): {', '.join(unknown)}. Known: {', '.join(API_KEY_SCOPES)}.")
        org_obj = org_get_or_create(slug=org)
        _, raw = api_key_create(org=org_obj, name=name, scopes=sorted(set(scopes)))
        self.stdout.write(raw)
