import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()

if os.environ.get("MEMORY_WARMUP", "1") != "0":
    from memory.warmup import warm_up

    warm_up()
