"""Thin Celery wrappers of the console's periodic work."""
from celery import shared_task


@shared_task(ignore_result=True)
def metrics_sample_task() -> None:
    from console.metrics_history import metrics_sample

    metrics_sample()
