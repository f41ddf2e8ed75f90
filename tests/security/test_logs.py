"""No message or memory text in the logs (issue "Reliability and security", item 5).

Every logger is opened to DEBUG and captured (caplog on the root logger, plus our own handler on the
root and on every logger that does not propagate) while the public scenario file runs through the
evaluation runner (the same REST calls an agent makes: appends, explicit memories, forgets,
revocations, recall, context, entity resolution), followed by one recall, one context and one MCP
recall of our own. Then no distinctive fragment (≥ 4 characters) of any message, memory or query
text may appear in any record's message, arguments or formatted exception.
"""
import json
import logging
import re
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client, TestCase

from memory.models import Memory, MemoryVersion
from tests.conftest import make_client

SCENARIOS = Path(settings.BASE_DIR).parent / "shared" / "eval" / "scenarios-zh.jsonl"
CJK_RUN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]{4,}")
WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'_-]*")


def fragments(text: str) -> set[str]:
    """Distinctive pieces of a text: every 4-character window of a run of CJK characters, and every
    run of three consecutive Latin words (at least 12 characters). Engineering log lines are English
    templates with ids and counts, so a hit is content, not coincidence."""
    found = set()
    for run in CJK_RUN.findall(text):
        found.update(run[i:i + 4] for i in range(len(run) - 3))
    words = WORD.findall(text)
    for i in range(len(words) - 2):
        piece = " ".join(words[i:i + 3])
        if len(piece) >= 12:
            found.add(piece)
    if len(words) <= 2 and len(" ".join(words)) >= 12:
        found.add(" ".join(words))
    return found


class Capture(logging.Handler):
    def __init__(self):
        super().__init__(level=logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record):
        self.records.append(record)


def record_texts(record: logging.LogRecord) -> list[str]:
    texts = []
    try:
        texts.append(record.getMessage())
    except Exception:  # a broken format string is a bug of its own; still check the pieces
        texts.append(str(record.msg))
    args = record.args if isinstance(record.args, (tuple, list)) else [record.args] if record.args else []
    texts += [str(arg) for arg in args] + [repr(arg) for arg in args]
    if record.exc_info:
        texts.append(logging.Formatter().formatException(record.exc_info))
    if record.exc_text:
        texts.append(record.exc_text)
    if record.stack_info:
        texts.append(record.stack_info)
    return texts


@pytest.fixture
def all_logging(caplog):
    """Every logger at DEBUG, every record captured; the old levels come back afterwards."""
    capture = Capture()
    caplog.set_level(logging.DEBUG)
    loggers = [logging.getLogger()] + [logging.getLogger(name) for name in list(logging.root.manager.loggerDict)]
    saved = [(lg, lg.level, lg.disabled) for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.DEBUG)
        lg.disabled = False
        if lg is logging.getLogger() or not lg.propagate:
            lg.addHandler(capture)
    yield capture, caplog
    for lg, level, disabled in saved:
        lg.setLevel(level)
        lg.disabled = disabled
        lg.removeHandler(capture)


def _commit_each_call(monkeypatch):
    """The runner's APIClient is a plain one: run each call's on-commit work (extraction,
    projections, forgetting) as a real commit would, inside the test's transaction."""
    from evaluation.runner import CaseRunner

    original = CaseRunner.call

    def call(self, *args, **kwargs):
        with TestCase.captureOnCommitCallbacks(execute=True):
            return original(self, *args, **kwargs)

    monkeypatch.setattr(CaseRunner, "call", call)


def _texts_of(cases) -> set[str]:
    texts = set()
    for case in cases:
        for step in case["steps"]:
            for field in ("content", "query"):
                if isinstance(step.get(field), str):
                    texts.add(step[field])
    return texts


@pytest.mark.django_db
def test_no_message_or_memory_text_in_logs(all_logging, monkeypatch, org):
    if not SCENARIOS.exists():
        pytest.skip(f"public scenario file not found at {SCENARIOS}")
    from evaluation.runner import CaseRunner, load_cases, new_run_id

    capture, caplog = all_logging
    cases = load_cases(str(SCENARIOS))
    _commit_each_call(monkeypatch)
    run_id = new_run_id()
    results = [CaseRunner(case, run_id=run_id, k_override=None, baseline=None).run(lambda: None) for case in cases]
    errors = [f"{r.id}: {r.error}" for r in results if r.error]
    assert not errors, errors  # the scenarios really ran (a run that stops early logs little)
    probes = sum(len(r.probes) for r in results)

    # One recall, one context and one MCP recall of our own, in the same capture.
    secret = "我的银行卡密码提示是蓝色海豚。The backup phrase is violet harbor lantern."
    api = make_client(org, "u1")
    conversation = api.post("/api/v1/conversations", {"title": "t"}, format="json").json()
    assert api.post(f"/api/v1/conversations/{conversation['id']}/messages",
                    {"role": "user", "content": secret}, format="json").status_code == 201
    # 200 when the message's own extraction already holds the phrase (the write restates it).
    assert api.post("/api/v1/memories", {"kind": "fact", "content": "Remember the violet harbor lantern phrase."},
                    format="json").status_code in (200, 201)
    query = "蓝色海豚是什么 violet harbor lantern"
    assert api.post("/api/v1/recall", {"query": query, "explain": True}, format="json").status_code == 200
    assert api.post(f"/api/v1/conversations/{conversation['id']}/context", {"message": query},
                    format="json").status_code == 200
    mcp = Client().post("/mcp", json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                            "params": {"name": "recall_memory", "arguments": {"query": query}}}),
                        content_type="application/json", HTTP_ACCEPT="application/json",
                        HTTP_AUTHORIZATION=f"Bearer {api.raw_key}", HTTP_X_MEMORY_USER="u1")
    assert mcp.status_code == 200 and "violet harbor" in mcp.content.decode(), mcp.content[:300]

    texts = _texts_of(cases) | {secret, query}
    texts |= set(Memory.objects.exclude(content="").values_list("content", flat=True))
    texts |= set(MemoryVersion.objects.exclude(content="").values_list("content", flat=True))
    needles = set().union(*(fragments(t) for t in texts))
    assert len(needles) > 500, len(needles)

    records = capture.records
    assert len(records) > 100, "hardly anything was logged: the capture is not working"
    assert {r.levelno for r in records} & {logging.DEBUG, logging.INFO}, "DEBUG/INFO records were not captured"
    leaks = []
    for record in records:
        for text in record_texts(record):
            hits = sorted(n for n in needles if n in text)
            if hits:
                leaks.append(f"{record.name}:{record.levelname}: {hits[:3]} in {text[:200]!r}")
                break
    assert not leaks, f"{len(leaks)} log records carry content ({len(records)} records, {probes} probes):\n" + \
        "\n".join(leaks[:20])
    assert len(caplog.records) > 0
