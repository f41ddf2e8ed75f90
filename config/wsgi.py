import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()

if os.environ.get("MEMORY_WARMUP", "1") != "0":
    from memory.warmup import warm_up

    warm_up()

# Single node with the embedded shard and a real broker: this process owns the shard, so it also
# consumes the vector queue (config/vector_consumer.py). Off with eager Celery (`make run`) and with a
# Qdrant server.
from config.vector_consumer import start_if_enabled  # noqa: E402

start_if_enabled()

# The console dashboard charts this process's request figures: they exist only in this process.
from console.metrics_history import start_sampler_thread  # noqa: E402

start_sampler_thread()
