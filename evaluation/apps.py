from django.apps import AppConfig


class EvaluationConfig(AppConfig):
    """The scenario harness (`memory_eval`): a black-box client of the REST API, like bench/. No models."""

    name = "evaluation"
    verbose_name = "Evaluation harness"
