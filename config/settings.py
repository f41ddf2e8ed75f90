"""The env-driven settings Django loads (with config/read_path_settings.py, imported below).

With no environment at all the service runs on its embedded default: SQLite, embedded
Qdrant shard and tiktoken cache under var/, local-memory cache, eager Celery. Setting
DATABASE_URL / REDIS_URL / CELERY_BROKER_URL / QDRANT_URL switches each adapter to its
service counterpart. Every variable is documented in docs/configuration.md.
"""
from pathlib import Path

from config.env import BASE_DIR, env
from config.read_path_settings import *  # noqa: F403  (recall ranking, forgetting by query, context assembly)

VAR_DIR = Path(env.str("MEMORY_VAR_DIR", default=str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)

SECRET_KEY = env.str("SECRET_KEY", default="embedded-default-insecure-key-change-me")
DEBUG = env.bool("DEBUG", default=False)
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "testserver"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "console.admin_site.ConsoleAdminConfig",  # django.contrib.admin with the console's site (dashboard index)
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI / Redoc served from our static files: /api/docs/ works offline
    "django_celery_beat",
    "common",  # what every app shares (text, plain reads, the Redis guard, ...): no models
    "tenancy",
    "entities",
    "conversations",
    "memory",
    "console",
    "evaluation",  # the scenario harness (memory_eval): a client of the API, no models
]

MIDDLEWARE = [
    "config.metrics.MetricsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]
# A `Server-Timing` header on every response: where the request's time went (common/server_timing.py).
# Off by default: it tells a caller how much work its request caused. Outermost, so `app` covers every
# middleware; not in the stack at all when off.
SERVER_TIMING = env.bool("SERVER_TIMING", default=False)
if SERVER_TIMING:
    MIDDLEWARE.insert(0, "common.server_timing.ServerTimingMiddleware")

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --------------------------------------------------------------------------- database
DATABASES = {
    "default": env.db_url("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'memory.sqlite3'}"),
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.mysql":
    try:
        import MySQLdb  # noqa: F401  (mysqlclient: the fast C driver, needs libmariadb-dev to build)
    except ImportError:
        # A fresh machine without the client headers still runs the service profile on PyMySQL;
        # Django checks the mysqlclient version, so PyMySQL reports the one it is compatible with.
        import pymysql

        pymysql.version_info = (2, 2, 1, "final", 0)
        pymysql.install_as_MySQLdb()
    DATABASES["default"].setdefault("OPTIONS", {})
    DATABASES["default"]["OPTIONS"].update({"charset": "utf8mb4", "init_command": "SET sql_mode='STRICT_TRANS_TABLES'"})
    DATABASES["default"]["TEST"] = {"CHARSET": "utf8mb4", "COLLATION": "utf8mb4_unicode_ci"}
    DATABASES["default"]["CONN_MAX_AGE"] = env.int("DATABASE_CONN_MAX_AGE", default=60)
elif DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets the console read while a write is in flight. A transaction takes the write lock at
    # BEGIN (IMMEDIATE): a DEFERRED one that read first and then writes cannot wait for the lock (SQLite
    # answers "database is locked" at once, the busy timeout does not apply), so concurrent appends
    # failed. Waits for the lock are absorbed by the busy timeout; tenancy/db.py retries beyond it.
    DATABASES["default"].setdefault("OPTIONS", {})
    DATABASES["default"]["OPTIONS"].update({
        "timeout": env.float("DATABASE_BUSY_TIMEOUT", default=20.0), "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"})
    DATABASES["default"]["CONN_MAX_AGE"] = env.int("DATABASE_CONN_MAX_AGE", default=60)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
# Lock contention (SQLite "database is locked", MariaDB deadlock 1213 / lock wait timeout 1205) is not an
# outage: an outermost write transaction is run again this many times (tenancy/db.py), then 429 database_busy.
DATABASE_CONTENTION_RETRIES = env.int("DATABASE_CONTENTION_RETRIES", default=3)

# --------------------------------------------------------------------------- cache
# Nothing on the request path waits on Redis for long (docs/reliability.md, "A Redis that stops
# answering"): every connection has connect and socket timeouts, and the first timeout opens a
# per-server breaker (common/redis_guard.py) so later calls fail at once for REDIS_BREAKER_SECONDS.
REDIS_CONNECT_TIMEOUT = env.float("REDIS_CONNECT_TIMEOUT", default=0.5)
REDIS_SOCKET_TIMEOUT = env.float("REDIS_SOCKET_TIMEOUT", default=0.5)
REDIS_BREAKER_SECONDS = env.float("REDIS_BREAKER_SECONDS", default=5.0)
REDIS_URL = env.str("REDIS_URL", default="")
if REDIS_URL:
    from common.redis_guard import GuardedConnection

    CACHES = {
        "default": {
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": env.str("CACHE_KEY_PREFIX", default="mem"),
            "OPTIONS": {
                "CLIENT_CLASS": "django_redis.client.DefaultClient",
                "SOCKET_CONNECT_TIMEOUT": REDIS_CONNECT_TIMEOUT,
                "SOCKET_TIMEOUT": REDIS_SOCKET_TIMEOUT,
                "CONNECTION_POOL_KWARGS": {"connection_class": GuardedConnection},
                # A dead Redis must only make us slower, never fail a request (DESIGN §6).
                "IGNORE_EXCEPTIONS": True,
            },
        }
    }
    DJANGO_REDIS_IGNORE_EXCEPTIONS = True
    DJANGO_REDIS_LOG_IGNORED_EXCEPTIONS = True
else:
    # Django's default of 300 entries culled the per-user generation counters (read as new generations).
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "memory-service",
                          "OPTIONS": {"MAX_ENTRIES": env.int("LOCAL_CACHE_MAX_ENTRIES", default=20_000)}}}
CACHE_TTL_SECONDS = env.int("CACHE_TTL_SECONDS", default=3600)
# Capacity of the per-user hash of standing memories (a user above it is served the most recent).
CACHE_MAX_STANDING_MEMORIES = env.int("CACHE_MAX_STANDING_MEMORIES", default=2000)
# /metrics (Prometheus): open like /readyz unless a token is set; then `Authorization: Bearer <token>`.
METRICS_TOKEN = env.str("METRICS_TOKEN", default="")
# The console dashboard's time series (console.MetricSample): at most one sample per process per
# METRICS_SAMPLE_SECONDS (0: no sampler thread in the web process), rows kept METRICS_HISTORY_HOURS.
METRICS_SAMPLE_SECONDS = env.int("METRICS_SAMPLE_SECONDS", default=60)
METRICS_HISTORY_HOURS = env.int("METRICS_HISTORY_HOURS", default=48)
# Recent-window cache: one list per conversation; longer conversations are read from the database.
CACHE_WINDOW_MAX_MESSAGES = env.int("CACHE_WINDOW_MAX_MESSAGES", default=1000)
CACHE_WINDOW_TTL_SECONDS = env.int("CACHE_WINDOW_TTL_SECONDS", default=3600)

# --------------------------------------------------------------------------- celery
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default=REDIS_URL or "memory://")
CELERY_RESULT_BACKEND = None
CELERY_TASK_ALWAYS_EAGER = env.bool("CELERY_TASK_ALWAYS_EAGER", default=CELERY_BROKER_URL == "memory://")
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Publishing happens after a write has committed, on the request thread: it must give up quickly.
# The Redis transport's connections go through the same breaker as the cache (config/celery.py).
BROKER_CONNECT_TIMEOUT = env.float("BROKER_CONNECT_TIMEOUT", default=0.5)
BROKER_SOCKET_TIMEOUT = env.float("BROKER_SOCKET_TIMEOUT", default=0.5)
CELERY_BROKER_CONNECTION_TIMEOUT = BROKER_CONNECT_TIMEOUT
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": env.int("CELERY_VISIBILITY_TIMEOUT", default=300),
    "socket_timeout": BROKER_SOCKET_TIMEOUT,
    "socket_connect_timeout": BROKER_CONNECT_TIMEOUT,
}
# Retries cover a pooled connection that died (Redis restarted); a stalled Redis is refused by the
# breaker at once, so a retry costs no further timeout. What is not published is found again by the
# extraction-resume and reconcile jobs from MySQL.
CELERY_TASK_PUBLISH_RETRY_POLICY = {
    "max_retries": env.int("BROKER_PUBLISH_RETRIES", default=2),
    "interval_start": 0, "interval_step": 0.1, "interval_max": 0.2,
}
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
CELERY_TIMEZONE = "UTC"

# --------------------------------------------------------------------------- vectors & models
QDRANT_URL = env.str("QDRANT_URL", default="")
QDRANT_API_KEY = env.str("QDRANT_API_KEY", default="") or None
VECTOR_INDEX_PATH = env.str("VECTOR_INDEX_PATH", default=str(VAR_DIR / "qdrant"))
EMBEDDING_MODEL = env.str("EMBEDDING_MODEL", default="use-multilingual+minilm")
# One thread per encode: the web process serves requests on several threads already, and BLAS/torch
# pools of 2 on 2 cores oversubscribe badly under load (bench: p95 476 ms vs 18 ms).
EMBEDDING_THREADS = env.int("EMBEDDING_THREADS", default=1)
# sentence-transformers models run on ONNX Runtime (same vectors, ~2.5x faster per query), exported
# once into this directory; off, or when export is impossible, they run on PyTorch.
EMBEDDING_ONNX = env.bool("EMBEDDING_ONNX", default=True)
EMBEDDING_ONNX_DIR = env.str("EMBEDDING_ONNX_DIR", default=str(VAR_DIR / "onnx"))
# Search queries of an ONNX model run on its int8 graph (~3x faster, cosine >= 0.99 to the float
# vector); stored vectors are always the float model's (docs/decisions.md D15).
EMBEDDING_INT8_QUERIES = env.bool("EMBEDDING_INT8_QUERIES", default=True)
TOKEN_ENCODING = env.str("TOKEN_ENCODING", default="o200k_base")
TIKTOKEN_CACHE_DIR = env.str("TIKTOKEN_CACHE_DIR", default=str(VAR_DIR / "tiktoken"))

# --------------------------------------------------------------------------- topology (docs/architecture.md)
# The embedded shard opens in one process only: on a single node every task that touches vectors goes
# to CELERY_VECTOR_QUEUE, which only the shard-owning web process consumes (VECTOR_CONSUMER_IN_WEB: a
# solo Celery consumer on a thread of the web process); `make worker` consumes the default queue.
# With a Qdrant server any process may touch vectors and nothing is routed (empty CELERY_VECTOR_QUEUE).
CELERY_TASK_DEFAULT_QUEUE = "celery"
CELERY_VECTOR_QUEUE = env.str("CELERY_VECTOR_QUEUE", default="" if QDRANT_URL else "vectors")
CELERY_TASK_ROUTES = ("config.celery.route_task",)
VECTOR_CONSUMER_IN_WEB = env.bool("VECTOR_CONSUMER_IN_WEB",
                                  default=bool(CELERY_VECTOR_QUEUE) and not CELERY_TASK_ALWAYS_EAGER)
# That consumer's broker connection (config/vector_consumer.py): a consumer waits for a stalled broker
# (0: no socket timeout) instead of failing an ack after BROKER_SOCKET_TIMEOUT, and kombu checks its
# BRPOP connection every VECTOR_CONSUMER_HEALTH_CHECK_SECONDS. A consumer that holds work (messages in
# its queue) but has consumed nothing for VECTOR_CONSUMER_STALL_SECONDS is reported degraded by /readyz
# and restarted by its watchdog (config/consumer_watchdog.py).
# /readyz answers within this many seconds whatever Redis does: a check that talks to Redis and has not
# answered by then is reported "timeout" (config/health.py).
READYZ_TIMEOUT_SECONDS = env.float("READYZ_TIMEOUT_SECONDS", default=1.0)
VECTOR_CONSUMER_SOCKET_TIMEOUT = env.float("VECTOR_CONSUMER_SOCKET_TIMEOUT", default=30.0)
VECTOR_CONSUMER_HEALTH_CHECK_SECONDS = env.int("VECTOR_CONSUMER_HEALTH_CHECK_SECONDS", default=10)
VECTOR_CONSUMER_STALL_SECONDS = env.float("VECTOR_CONSUMER_STALL_SECONDS", default=30.0)

# Write path: how many recent same-kind memories semantic dedup compares against (plus same-slot ones).
SEMANTIC_DEDUP_WINDOW = env.int("SEMANTIC_DEDUP_WINDOW", default=500)
# Per-model similarity thresholds override, JSON: {"use-multilingual-v3": {"duplicate": 0.8, ...}}.
MEMORY_THRESHOLDS = env.json("MEMORY_THRESHOLDS", default={})
# The learned judge's P(duplicate) from which (and above its P(replaces)) a same-kind pair the subject rules
# leave side by side, with no other value and no change announced, is a restatement: a duplicate
# (memory/services/subject_tier.py, D25). 0.5: the judge's own trained duplicate band.
MEMORY_RESTATEMENT_MIN = env.float("MEMORY_RESTATEMENT_MIN", default=0.5)
# The learned judge's replaces where the subject rules left a pair side by side (subject_tier.py, D29, D31).
# On by default since session 24 (D31): on the tuning scenario files the stale injection fell 0.57 -> 0.38 (l)
# and 0.55 -> 0.52 (k) and LoCoMo stays above its floors (docs/evaluation.md, "Session 24"); a superseded
# memory stays in its chain (history, audit, restorable). Off leaves replaces to the subject rules alone.
# P(replaces) >= min supersedes the likeliest older memory; >= conflict (null: the judge's trained band,
# models/judge.npz, chosen out of fold on writers the fold never read: 0.66 for the shipped model) makes a
# possible conflict: both kept, the newer ranks first, queued for review. Replacing from the band (session 25)
# lowered stale injection on the tuning scenarios (k 0.485 -> 0.455, l 0.405 -> 0.324) but replaced look-alikes
# (a landlord by a move to the same city, a plan by a call about it): crossling-tune fell under the plain
# embedder (0.96 -> 0.94), so the band flags and 0.85 replaces. No change word is needed: changes told as
# events or bare new values carry none. `event_min`: a user's event replaces the fact it changes from this
# P(replaces) (or min, if higher), judged as an event: most events change nothing.
# `min_cosine`: only memories at least this close (stored cosine) are judged ("我们合作社今年的采购预算是八十万" /
# "Our cooperative bought a new grain dryer" read P >= 0.9 to the model: the floor keeps such pairs from it).
# `needs_change_word`: only a statement with a change word or a negation (memory/subjects/current.may_say_change)
# replaces: another attribute of one person ("李大爷养了一只鹦鹉" / "李大爷是退休的木匠") reads P 0.99 to the model.
# `far`, `far_cosine`, `far_min` (D34): a statement that says a change has its `far` closest memories under
# `min_cosine` (down to `far_cosine`) read too; a reading of at least `far_min` is kept on the new memory
# (metadata "far_reads") and acts only at read time, where the query puts both among its first answers
# (RECALL_HISTORY["anchor"]). 0 `far`: off.
# P(coexists) of the learned judge at which a restatement the subject rules read is kept as its own
# memory (memory/services/subject_tier.py::_kept_apart); above 1 never.
MEMORY_LEARNED_KEEP_APART = env.float("MEMORY_LEARNED_KEEP_APART", default=0.9)
MEMORY_LEARNED_REPLACE = env.json("MEMORY_LEARNED_REPLACE", default={
    "enabled": True, "min": 0.85, "conflict": None, "event_min": 0.85, "judged": 8, "needs_change_word": False,
    "min_cosine": 0.4, "far": 4, "far_cosine": 0.1, "far_min": 0.7})
TASK_MEMORY_TTL_HOURS = env.int("TASK_MEMORY_TTL_HOURS", default=24)
# Pending extraction (Message.extracted_at NULL, set in the message's own transaction) older than this is
# queued again (extracted in place with eager tasks) by the sweep; 600 s while the default queue has a backlog.
EXTRACTION_RESUME_AFTER_SECONDS = env.int("EXTRACTION_RESUME_AFTER_SECONDS", default=30)
# In-process maintenance scheduler (memory/jobs/scheduler_thread.py), started by config/wsgi.py in one web process:
# "all" runs every maintenance job (the embedded default: nothing else runs them), "sweep" only the
# extraction sweep (with a broker: beat runs the rest, and recovery must not depend on beat), "off".
MAINTENANCE_SCHEDULER = env.str("MAINTENANCE_SCHEDULER", default="all" if CELERY_TASK_ALWAYS_EAGER else "sweep")
EXTRACTION_SWEEP_SECONDS = env.float("EXTRACTION_SWEEP_SECONDS", default=5.0)
# The projection sweep (same thread, every mode but "off"): rows with projected_version < version last
# written more than PROJECTION_RESUME_AFTER_SECONDS ago lost their task (a failed publish, a broker
# restarted empty, a kill between commit and publish) and are queued again (run in place when eager).
PROJECTION_SWEEP_SECONDS = env.float("PROJECTION_SWEEP_SECONDS", default=10.0)
PROJECTION_RESUME_AFTER_SECONDS = env.int("PROJECTION_RESUME_AFTER_SECONDS", default=30)
# The scheduler's scans (reconcile, expire, evict, purge, re-embed) first run this long after start-up.
MAINTENANCE_START_DELAY_SECONDS = env.float("MAINTENANCE_START_DELAY_SECONDS", default=120.0)
# With the scheduler on "all": re-embed into EMBEDDING_MODEL when it is not the live collection's model.
MAINTENANCE_REEMBED = env.bool("MAINTENANCE_REEMBED", default=True)
DEFAULT_MEMORY_CAPACITY = env.int("DEFAULT_MEMORY_CAPACITY", default=5000)

LLM_BASE_URL = env.str("LLM_BASE_URL", default="")
LLM_MODEL = env.str("LLM_MODEL", default="gpt-4o-mini")
LLM_API_KEY = env.str("LLM_API_KEY", default="")
LLM_TIMEOUT = env.float("LLM_TIMEOUT", default=20.0)
# The rolling summary is made inside a context request: its LLM call gets a much shorter timeout
# than extraction (which runs in a worker); on timeout the extractive summary answers.
SUMMARY_LLM_TIMEOUT = env.float("SUMMARY_LLM_TIMEOUT", default=5.0)
# The learned gate's uncertain band (Memory.metadata["gate"]["p"], the keep probability): memories
# kept with p inside it are what the LLM reviewer re-reads when an LLM is configured (D28).
GATE_UNCERTAIN_LOW = env.float("GATE_UNCERTAIN_LOW", default=0.35)
GATE_UNCERTAIN_HIGH = env.float("GATE_UNCERTAIN_HIGH", default=0.65)
# The LLM reviewer (memory/services/llm_review/, D28): with LLM_BASE_URL set, open possible conflicts and
# memories in the gate's uncertain band go to the LLM in batches of one user's items, off the request path
# (a maintenance job every LLM_REVIEW_EVERY_MINUTES). Whatever it cannot decide stays for the operator.
LLM_REVIEW_ENABLED = env.bool("LLM_REVIEW_ENABLED", default=True)
LLM_REVIEW_BATCH_SIZE = env.int("LLM_REVIEW_BATCH_SIZE", default=20)
LLM_REVIEW_MAX_PER_RUN = env.int("LLM_REVIEW_MAX_PER_RUN", default=200)
LLM_REVIEW_EVERY_MINUTES = env.int("LLM_REVIEW_EVERY_MINUTES", default=10)
LLM_REVIEW_TIMEOUT = env.float("LLM_REVIEW_TIMEOUT", default=30.0)
LLM_REVIEW_MAX_ATTEMPTS = env.int("LLM_REVIEW_MAX_ATTEMPTS", default=3)
LLM_REVIEW_LOOKBACK_DAYS = env.int("LLM_REVIEW_LOOKBACK_DAYS", default=7)

# --------------------------------------------------------------------------- entity access
ENTITY_ACCESS_POLICY = env.str("ENTITY_ACCESS_POLICY", default="local")  # local | http
ENTITY_POLICY_URL = env.str("ENTITY_POLICY_URL", default="")
ENTITY_POLICY_TIMEOUT = env.float("ENTITY_POLICY_TIMEOUT", default=0.5)
ENTITY_POLICY_CACHE_TTL = env.float("ENTITY_POLICY_CACHE_TTL", default=5.0)
ENTITY_POLICY_API_KEY = env.str("ENTITY_POLICY_API_KEY", default="")

RESOLVE_RECENT_MESSAGES = env.int("RESOLVE_RECENT_MESSAGES", default=10)
RESOLVE_PAST_MENTIONS = env.int("RESOLVE_PAST_MENTIONS", default=200)
# An ambiguous resolution lists at most this many candidates (in the rule's order) and says
# `candidates_truncated` when there are more; access is checked only as far as needed to fill it.
# At least 2: one candidate is not an ambiguity.
RESOLVE_MAX_CANDIDATES = max(2, env.int("RESOLVE_MAX_CANDIDATES", default=20))

# --------------------------------------------------------------------------- API limits
API_USER_HEADER = "HTTP_X_MEMORY_USER"
MAX_MESSAGE_CHARS = env.int("MAX_MESSAGE_CHARS", default=100_000)
MAX_MEMORY_CHARS = env.int("MAX_MEMORY_CHARS", default=4_000)
MAX_BATCH_MESSAGES = env.int("MAX_BATCH_MESSAGES", default=500)
MAX_PAGE_SIZE = env.int("MAX_PAGE_SIZE", default=200)
DEFAULT_PAGE_SIZE = env.int("DEFAULT_PAGE_SIZE", default=50)
MAX_RECALL_K = env.int("MAX_RECALL_K", default=100)
MAX_CONTEXT_BUDGET = env.int("MAX_CONTEXT_BUDGET", default=128_000)
MAX_USER_ID_CHARS = 128
# Dates a client may send (occurred_at, valid_from/to, at, ...): outside these years a 400 names the field.
DATE_MIN_YEAR = env.int("DATE_MIN_YEAR", default=1970)
DATE_MAX_YEAR = env.int("DATE_MAX_YEAR", default=2100)
# A repeated Idempotency-Key within this window returns the first answer (docs/api.md "Retries").
IDEMPOTENCY_RETENTION_HOURS = env.int("IDEMPOTENCY_RETENTION_HOURS", default=24)
DATA_UPLOAD_MAX_MEMORY_SIZE = env.int("MAX_REQUEST_BYTES", default=10 * 1024 * 1024)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["tenancy.authentication.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["tenancy.authentication.HasOrgAndUser"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["tenancy.parsers.JSONParser"],  # bounds nesting, refuses lone surrogates
    "EXCEPTION_HANDLER": "tenancy.exceptions.api_exception_handler",
    "DEFAULT_THROTTLE_CLASSES": ["tenancy.throttling.ApiKeyRateThrottle"],
    "DEFAULT_THROTTLE_RATES": {"api_key": env.str("API_RATE_LIMIT", default="6000/min")},
    "UNAUTHENTICATED_USER": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Memory Service API",
    "DESCRIPTION": "Long-term memory, context assembly and entity resolution for LLM agents.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # No CDN: the UI's JS/CSS/favicon come from drf-spectacular-sidecar through our static files.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": [],
    "COMPONENT_SPLIT_REQUEST": True,
    "APPEND_COMPONENTS": {
        "securitySchemes": {
            "ApiKey": {"type": "http", "scheme": "bearer"},
            "ActingUser": {"type": "apiKey", "in": "header", "name": "X-Memory-User"},
        }
    },
    "SECURITY": [{"ApiKey": [], "ActingUser": []}],
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums", "tenancy.schema.add_error_responses"],
}

# --------------------------------------------------------------------------- i18n, static, security
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
LOGIN_URL = "admin:login"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="WARNING")},
    "loggers": {"jieba": {"level": "ERROR"}},
}
