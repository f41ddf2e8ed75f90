"""Background jobs of the memory app, each module named for what it runs (docs/architecture.md,
What runs where):

- `startup_warmup`: the web process's start-up thread that loads models, jieba, the planner statistics
  and the vector index before `/readyz` says ready;
- `scheduler_thread`: the in-process scheduler, a daemon thread of the shard-owning web process that
  runs the sweeps and (on the embedded default) every periodic job;
- `lost_work_resume`: queue again what a lost task left undone (extraction, approved forget
  requests, projections), run by the sweeps and by beat's `extraction_resume_task`;
- `run_records`: the last run of each job, wherever it ran, for `/readyz` and the console;
- `beat_schedule`: the django-celery-beat rows of the periodic jobs a broker deployment runs.

The projection runs themselves (reconcile, rebuild, re-embed) are `memory/projections/`; what the
background work has left to do is read by `memory/selectors/backlog.py`.
"""
