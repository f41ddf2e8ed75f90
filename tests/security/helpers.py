"""Shared by the security tests: auth headers, on-commit capture, unique content tokens, fuzz statistics."""
import random
import string
from collections import Counter, defaultdict

from django.test import TestCase

# Fuzz statistics, printed by tests/security/conftest.py at the end of the session (and written as
# JSON when FUZZ_REPORT is set): operation label -> Counter of status codes.
FUZZ_STATUS: dict[str, Counter] = defaultdict(Counter)
FUZZ_FAILURES: list[str] = []


def auth_headers(client) -> dict[str, str]:
    """The Authorization / X-Memory-User pair of a `make_client` client, for non-Django HTTP clients."""
    return {"Authorization": f"Bearer {client.raw_key}", "X-Memory-User": client._credentials["HTTP_X_MEMORY_USER"]}


def on_commit_runs():
    """Run the on-commit callbacks of the enclosed calls (extraction, projections), as CommitClient does."""
    return TestCase.captureOnCommitCallbacks(execute=True)


class Tokens:
    """Unique, recognisable words to plant in content: 'zq' + 10 lowercase letters (no real word
    starts like that, and BM25/jieba keep it whole), drawn from a seeded RNG."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.issued: set[str] = set()

    def new(self) -> str:
        while True:
            token = "zq" + "".join(self.rng.choice(string.ascii_lowercase) for _ in range(10))
            if token not in self.issued:
                self.issued.add(token)
                return token
