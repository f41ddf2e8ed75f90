"""Run as a script by test_vector_consumer_stall.py: the in-web vector consumer (and its watchdog) in a
process of its own, on a redis-server the test owns, with an ack in flight when Redis is paused.

Argv: redis port, pause seconds. Settings come from the environment. Prints one JSON line per sample
and a last line with the outcome.
"""
import json
import os
import signal
import sys
import threading
import time

import django


def main() -> None:
    port, pause, redis_pid = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
    django.setup()
    import redis
    from celery import Celery
    from celery.signals import task_postrun

    from config import vector_consumer
    from config.consumer_watchdog import start_watchdog, vector_consumer_health
    from config.vector_consumer import start_vector_consumer

    done = {"n": 0, "paused_at": None}

    def after_task(**kwargs) -> None:
        # The pause lands right after a task ran and before its late ack: the ack is in flight.
        done["n"] += 1
        if done["n"] == 20 and done["paused_at"] is None:
            os.kill(redis_pid, signal.SIGSTOP)
            done["paused_at"] = time.monotonic()

    task_postrun.connect(after_task, weak=False)
    start_vector_consumer()
    start_watchdog()
    stop = threading.Event()
    url = f"redis://127.0.0.1:{port}/0"

    def publish() -> None:  # a steady trickle of trivial tasks onto the vector queue
        app = Celery("probe-publisher", set_as_current=False)
        while not stop.is_set():
            try:
                with app.connection_for_write(url) as conn:
                    while not stop.is_set():
                        app.send_task("celery.accumulate", args=[1], queue="vectors", connection=conn)
                        time.sleep(0.05)
            except Exception:
                time.sleep(0.2)

    threading.Thread(target=publish, daemon=True).start()
    while done["paused_at"] is None:
        time.sleep(0.05)
    statuses = []

    def status() -> dict:
        # Between the watchdog stopping the stalled consumer and starting its replacement no consumer
        # runs: /readyz reports that check as failed (config/health.py); here it counts as degraded.
        try:
            return vector_consumer_health()
        except RuntimeError:
            return {"status": "degraded", "reason": "restarting"}

    while time.monotonic() - done["paused_at"] < pause:
        statuses.append(status().get("status", "ok"))
        time.sleep(1)
    at_resume = done["n"]
    os.kill(redis_pid, signal.SIGCONT)
    resumed = time.monotonic()
    client = redis.Redis(port=port, db=0)
    time.sleep(3)
    stop.set()  # what is queued from now on must all be consumed
    drained_after = None
    while time.monotonic() - resumed < 90:
        statuses.append(status().get("status", "ok"))
        if client.llen("vectors") == 0 and done["n"] > at_resume:
            drained_after = round(time.monotonic() - resumed, 1)
            break
        time.sleep(1)
    print(json.dumps({"degraded_samples": statuses.count("degraded"), "samples": len(statuses),
                      "consumed_after_resume": done["n"] - at_resume, "drained_after_s": drained_after,
                      "restarts": vector_consumer.progress["restarts"]}), flush=True)
    os._exit(0)


if __name__ == "__main__":
    main()
