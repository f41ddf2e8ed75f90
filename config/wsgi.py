import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()

# Threads of this process (request threads, the encoder threads that embed a query while its request
# reads) hand the GIL to each other: a thread waiting for it waits up to the switch interval, 5 ms by
# default, which a recall paid several times over (docs/performance-history.md).
import sys  # noqa: E402

from django.conf import settings  # noqa: E402

sys.setswitchinterval(settings.PYTHON_SWITCH_INTERVAL_SECONDS)

# Models and the vector index load on a background thread: the port answers at once (/healthz 200,
# /readyz 503 "warmup: loading" until they are loaded), instead of accepting connections and
# answering nothing for the ~15 s the loading takes.
if os.environ.get("MEMORY_WARMUP", "1") != "0":
    from memory.jobs.startup_warmup import start_warm_up

    start_warm_up()

# Single node with the embedded shard and a real broker: this process owns the shard, so it also
# consumes the vector queue (config/vector_consumer.py). Off with eager Celery (`make run`) and with a
# Qdrant server.
# A watchdog restarts it when it holds work but stops consuming (config/consumer_watchdog.py).
from config.vector_consumer import start_if_enabled  # noqa: E402

if start_if_enabled():
    from config.consumer_watchdog import start_watchdog

    start_watchdog()

# Maintenance in this process (memory/jobs/scheduler_thread.py): every job on the embedded default, the
# extraction sweep with a broker. One process per node (a file lock) runs it.
from memory.jobs.scheduler_thread import start_scheduler  # noqa: E402

start_scheduler()

# The console dashboard charts this process's request figures: they exist only in this process.
from console.metrics_history import start_sampler_thread  # noqa: E402

start_sampler_thread()
