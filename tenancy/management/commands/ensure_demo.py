import os
import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from tenancy.services import api_key_create, api_key_verify, org_get_or_create


class Command(BaseCommand):
    help = "Ensure a demo org, API key and console operator exist (local runs only) and print their credentials."

    def add_arguments(self, parser):
        # `make run` passes the address gunicorn will bind, so the printed console link is the real one.
        parser.add_argument("--host", default=os.environ.get("HOST") or "127.0.0.1")
        parser.add_argument("--port", type=int, default=int(os.environ.get("PORT") or 8000))

    def handle(self, *args, **options):
        org = org_get_or_create(slug="demo", name="Demo org")
        key_file = settings.VAR_DIR / "demo_api_key.txt"
        raw = key_file.read_text().strip() if key_file.exists() else ""
        if not raw or api_key_verify(raw_key=raw) is None:
            _, raw = api_key_create(org=org, name="demo")
            key_file.write_text(raw + "\n")
            key_file.chmod(0o600)
        admin_file = settings.VAR_DIR / "demo_admin_password.txt"
        User = get_user_model()
        if not User.objects.filter(username="admin").exists() or not admin_file.exists():
            password = secrets.token_urlsafe(12)
            user, _ = User.objects.get_or_create(username="admin", defaults={"is_staff": True, "is_superuser": True})
            user.set_password(password)
            user.save()
            admin_file.write_text(password + "\n")
            admin_file.chmod(0o600)
        password = admin_file.read_text().strip()
        self.stdout.write(f"demo org: demo\nAPI key:  {raw}\n(also in {key_file})\n"
                          f"console:  http://{options['host']}:{options['port']}/admin/  user admin / password {password}\n"
                          f"API docs: http://{options['host']}:{options['port']}/api/docs/\n")
