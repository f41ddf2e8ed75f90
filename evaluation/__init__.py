"""The scenario harness: `manage.py memory_eval FILE` runs a scenario file (../shared/eval/FORMAT.md)
through the REST API and reports its metrics. A black-box client of the service (the `dense`
baseline alone reads the stored vectors), at the top of the layer order: nothing imports it.

data/ and pairs/ hold the labelled sets the benches and tests read (docs/evaluation.md)."""
