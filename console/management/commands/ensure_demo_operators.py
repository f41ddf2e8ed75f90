import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from console.roles import APPROVER, VIEWER, ensure_roles


class Command(BaseCommand):
    help = ("Ensure the console roles and one demo operator per role (local runs only: `make run`) and print their "
            "credentials. Passwords are kept under var/ like the demo admin's.")

    def handle(self, *args, **options):
        groups = ensure_roles()
        User = get_user_model()
        for username, group in (("viewer", VIEWER), ("approver", APPROVER)):
            pw_file = settings.VAR_DIR / f"demo_{username}_password.txt"
            user = User.objects.filter(username=username).first()
            if user is None or not pw_file.exists():
                password = secrets.token_urlsafe(12)
                user = user or User(username=username)
                user.is_staff, user.is_superuser = True, False
                user.set_password(password)
                user.save()
                pw_file.write_text(password + "\n")
                pw_file.chmod(0o600)
            user.groups.set([groups[group]])
            self.stdout.write(f"          user {username} / password {pw_file.read_text().strip()}  ({group})\n")
