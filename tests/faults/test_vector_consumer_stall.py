"""Issue 42, part 2: the in-web vector consumer cannot stop silently after a Redis pause.

The consumer (config/vector_consumer.py) and its watchdog (config/consumer_watchdog.py) run in a
process of their own (tests/faults/consumer_stall_probe.py) on a redis-server this test owns; a steady
trickle of tasks goes to the vector queue, and Redis is SIGSTOPped right after a task ran, while its
late ack is in flight, for 20 s. Before the fix the ack timed out on the web's 0.5 s broker timeout
and the consumer never consumed again.

- With the consumer's own socket timeout (the default) the ack waits for Redis and nothing breaks.
- With a 0.5 s consumer timeout (the old behaviour, forced) the ack fails and the consumer goes
  idle; the watchdog sees messages waiting with no delivery for VECTOR_CONSUMER_STALL_SECONDS and
  restarts it.
Either way the queue drains after Redis returns (generous liveness deadline: 90 s), and while Redis
was paused the consumer's health said degraded.
"""
import json
import subprocess
import sys

import pytest
from django.conf import settings

from tests.faults.conftest import RedisServer, env_for_subprocess

PAUSE_SECONDS = 20


@pytest.mark.service_only  # self-contained, but once per CI run is enough
@pytest.mark.parametrize("socket_timeout, restarts", [("30", 0), ("0.5", 1)], ids=["consumer-timeout", "forced-ack-failure"])
def test_consumer_resumes_by_itself_after_a_pause_with_an_ack_in_flight(tmp_path, socket_timeout, restarts, tally):
    redis = RedisServer(tmp_path / "redis").start()
    env = env_for_subprocess(
        DJANGO_SETTINGS_MODULE="config.settings", CELERY_BROKER_URL=redis.url(0), REDIS_URL=redis.url(1),
        MEMORY_VAR_DIR=str(tmp_path / "var"), MEMORY_WARMUP="0", LOG_LEVEL="WARNING",
        VECTOR_CONSUMER_SOCKET_TIMEOUT=socket_timeout, VECTOR_CONSUMER_STALL_SECONDS="5",
        TIKTOKEN_CACHE_DIR=str(settings.TIKTOKEN_CACHE_DIR))
    for name in ("QDRANT_URL", "CELERY_TASK_ALWAYS_EAGER", "CELERY_VECTOR_QUEUE", "VECTOR_CONSUMER_IN_WEB"):
        env.pop(name, None)
    (tmp_path / "var").mkdir()
    try:
        out = subprocess.run([sys.executable, "-m", "tests.faults.consumer_stall_probe", str(redis.port),
                              str(PAUSE_SECONDS), str(redis.proc.pid)],
                             cwd=settings.BASE_DIR, env=env, capture_output=True, text=True, timeout=240)
    finally:
        redis.resume()
        redis.close()
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    t = tally(f"vector consumer, Redis paused {PAUSE_SECONDS}s with an ack in flight (consumer timeout {socket_timeout}s)")
    t.extra.update(result)
    assert result["drained_after_s"] is not None, (result, out.stderr[-3000:])
    assert result["consumed_after_resume"] > 0
    assert result["degraded_samples"] > 0, result
    assert result["restarts"] == restarts, (result, out.stderr[-3000:])
