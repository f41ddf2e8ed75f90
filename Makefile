# Two commands matter: `make run` (serve on the embedded default) and `make test`.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8000
# The service profile of the test suite: real MariaDB, Redis cache and a Celery broker on Redis.
# The database name is per run (pytest-django creates test_<name>), so two runs on one machine
# never drop each other's tables.
RUN_ID := $(shell date +%s)$(shell echo $$$$)
SERVICE_ENV := DATABASE_URL=mysql://root@127.0.0.1:3306/memsvc$(RUN_ID) REDIS_URL=redis://127.0.0.1:6379/13 \
	CELERY_BROKER_URL=redis://127.0.0.1:6379/14
PYTEST_ARGS ?=

.PHONY: run test test-embedded test-service lint install migrate worker beat eval-public clean

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	# torch first, from the CPU wheel on this disk: letting sentence-transformers pull torch fetches a CUDA build.
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -e '.[st,test]'
	# Optional: the C MySQL driver when libmariadb-dev is present; PyMySQL serves otherwise.
	$(PIP) install -q 'mysqlclient==2.3.2' >/dev/null 2>&1 || echo "mysqlclient not built (no libmariadb-dev): using PyMySQL"
	touch $(STAMP)

install: $(STAMP)

migrate: install
	$(PY) manage.py migrate --noinput -v0

run: migrate
	$(PY) manage.py collectstatic --noinput -v0
	$(PY) manage.py ensure_demo --host $(HOST) --port $(PORT)
	$(PY) manage.py ensure_demo_operators
	# One process owns the embedded Qdrant shard: a single gunicorn worker with threads.
	# The worker's heartbeat file in memory: gunicorn touches it on every pass of its loop.
	$(VENV)/bin/gunicorn config.wsgi -b $(HOST):$(PORT) -w 1 --threads 8 --timeout 120 $(if $(wildcard /dev/shm),--worker-tmp-dir /dev/shm)

# The two profiles run side by side: they share no port, file or database (tests/conftest.py gives each run its
# own var/, the service profile's database is named per run, fault tests start their own backends on spare ports).
# -O prints each profile's output whole when it ends; either failing fails the run.
test:
	$(MAKE) --no-print-directory -j2 -O test-embedded test-service

# Lint and import order first (ruff, configured in pyproject.toml): a failing lint fails the run.
lint: install
	$(VENV)/bin/ruff check --no-cache .

test-embedded: install lint
	$(PY) -m pytest -q $(PYTEST_ARGS)

test-service: install
	$(SERVICE_ENV) $(PY) -m pytest -q $(PYTEST_ARGS)

# The default queue only: on a single node the vector queue (projections) is consumed by the web
# process, which owns the embedded shard (docs/architecture.md, Topologies). With a Qdrant server nothing
# is routed there and the default queue carries every task.
WORKER_QUEUES ?= celery
worker: install
	$(PY) -m celery -A config worker -l info --concurrency 2 -Q $(WORKER_QUEUES)

beat: install
	$(PY) -m celery -A config beat -l info

# The quality gate CI applies (tests/evaluation/test_eval.py); the entities file waits for relations support.
EVAL_GATE := --quiet --min-pass 1 --max-stale 0 --max-erasure 0
eval-public: migrate
	$(PY) manage.py memory_eval ../shared/eval/scenarios-zh.jsonl $(EVAL_GATE)
	$(PY) manage.py memory_eval ../shared/eval/scenarios-variants-zh.jsonl $(EVAL_GATE)

clean:
	rm -rf var/ .pytest_cache test-artifacts
