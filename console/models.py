from django.db import models


class MetricSample(models.Model):
    """One periodic sample of what /metrics reports, so the dashboard can chart it over time.

    HTTP figures are per process (prometheus_client counters live in the process that served the
    requests), so each row holds the *deltas* of one process since its previous sample: rows of
    several processes at the same time add up. Gauges (backlogs, dependencies) are read from the
    system of record and the broker and are the same whichever process samples them. Ids and counts
    only, never text. Rows older than METRICS_HISTORY_HOURS are pruned when a sample is taken.
    """

    at = models.DateTimeField(db_index=True)
    process = models.CharField(max_length=100)  # host:pid of the sampling process
    gauges = models.JSONField(default=dict, blank=True)
    # "METHOD route" -> [requests, 4xx, 5xx, latency seconds sum, *cumulative latency bucket counts]
    routes = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["at", "id"]

    def __str__(self) -> str:
        return f"metric sample {self.id} at {self.at:%Y-%m-%d %H:%M:%S} ({self.process})"
