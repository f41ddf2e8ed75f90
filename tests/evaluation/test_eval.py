"""memory_eval: the scoring rules on hand-made responses, and a smoke run of the public scenarios."""
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from evaluation import checks
from evaluation.gates import gate_failures, gate_parse
from evaluation.metrics import compute, source_scores
from evaluation.runner import CaseResult, ProbeResult, load_cases
from evaluation.schema import ScenarioFormatError
from tests.conftest import SERVICE_PROFILE

SHARED = Path(__file__).resolve().parents[3] / "shared" / "eval" / "scenarios-zh.jsonl"


def item(id, content, kind="fact", assertion="user_stated", refs=()):
    return {"id": id, "content": content, "kind": kind, "assertion": assertion,
            "sources": [{"ref": r, "message_id": None, "conversation_id": None} for r in refs]}


def test_contains_is_normalised():
    items = [item(1, "用户喜欢 简洁 的回答")]
    assert checks.check_contains(["简洁的回答"], items) == []
    assert checks.check_contains(["ＡＢＣ"], [item(2, "abc")]) == []  # NFKC + casefold
    assert checks.check_contains(["长篇"], items)


def test_forbid_ignores_dated_episodes_but_erased_does_not():
    items = [item(1, "维保计划默认看两周", kind="episode")]
    assert checks.check_forbid({"contains": ["两周"]}, items, None, {}) == []
    assert checks.check_erased({"contains": ["两周"]}, items, None)
    standing = [item(2, "维保计划默认看两周", kind="preference")]
    assert checks.check_forbid({"contains": ["两周"]}, standing, None, {})


def test_forbid_checks_only_the_memory_section_of_the_context():
    context = {"messages": [{"role": "user", "content": "两周"}],
               "sections": [{"name": "memories", "text": "一个月"}, {"name": "recent", "text": "两周"}]}
    assert checks.check_forbid({"contains": ["两周"]}, [], context, {}) == []
    assert checks.check_erased({"contains": ["两周"]}, [], context)


def test_items_unique_and_labels():
    items = [item(1, "Java 后端", kind="preference"), item(2, "Java 是主力语言", kind="episode")]
    assert checks.check_unique(["Java"], items) == []
    assert checks.check_unique(["Java"], items + [item(3, "Java again")])
    assert checks.check_items([{"contains": "后端", "kind": "preference"}], items) == []
    assert checks.check_items([{"contains": "后端", "assertion": "model_suggestion"}], items)
    assert checks.check_labels(["m1"], items, {"m1": 2}) == []
    assert checks.check_labels(["m1"], items, {"m1": 9})


def test_tool_pairs_and_budget():
    good = {"budget": 100, "messages": [{"role": "assistant", "content": "", "tool_calls": [{"id": "c1"}]},
                                        {"role": "tool", "tool_call_id": "c1", "content": "x"}]}
    assert checks.check_tool_pairs(good) == []
    assert checks.check_tool_pairs({"messages": good["messages"][:1]})
    assert checks.check_tool_pairs({"messages": good["messages"][1:]})
    assert checks.check_within_budget(100, good) == []
    assert checks.check_within_budget(5, good)


def test_entity_expectations():
    resolved = {"status": "resolved", "entity": {"external_id": "A-1"}, "candidates": []}
    ambiguous = {"status": "ambiguous", "entity": None, "candidates": [{"external_id": "A-2"}, {"external_id": "A-1"}]}
    assert checks.check_entity("A-1", resolved) == []
    assert checks.check_entity("A-2", resolved)
    assert checks.check_entity({"ambiguous": ["A-1", "A-2"]}, ambiguous) == []
    assert checks.check_entity({"none": True}, resolved)


def test_source_metrics():
    probe = ProbeResult(label="q1-single-hop", passed=True, failures=[], source_gold=["D1:1", "D1:2"],
                        ranked_refs=[["D9:9"], ["D1:2"], ["D1:1"]], k=2)
    recall_at_2, all_hit, ndcg = source_scores(probe, 2)
    assert recall_at_2 == 0.5 and all_hit == 0.0
    assert source_scores(probe, 3)[:2] == (1.0, 1.0)
    assert 0 < ndcg < 1
    metrics = compute([CaseResult(id="c", passed=True, probes=[probe])], source_ks=(2, 3))
    assert metrics["source_recall@2"] == 0.5 and metrics["source_recall@3"] == 1.0
    assert metrics["source_recall_by_label_suffix"] == {"single-hop": 0.5}
    assert metrics["stale_injection_rate"] is None  # no probe measured it


# CI's quality gate over every public scenario file (`make test`, embedded profile only: the run is the same
# code path in both, and one profile keeps CI short). A file listed here is run and expected to fail its
# gate (strict: once it passes, the test fails until the line is removed). Switch a file on by deleting it.
GATE = ["--min-pass", "1.0", "--max-stale", "0", "--max-erasure", "0"]
# A public file whose gate cannot hold yet (strict: once it passes, the entry must go). None today.
GATE_PENDING: dict[str, str] = {}
PUBLIC_FILES = sorted(SHARED.parent.glob("scenarios*.jsonl"))
embedded_only = pytest.mark.skipif(SERVICE_PROFILE, reason="the scenario gate runs once, in the embedded profile")


def _public(path: Path):
    pending = GATE_PENDING.get(path.name)
    marks = [pytest.mark.xfail(reason=pending, strict=True)] if pending else []
    return pytest.param(path, id=path.name, marks=marks)


def _require_public_files():
    if not PUBLIC_FILES:
        pytest.skip(f"public scenarios not found at {SHARED.parent}")


@embedded_only
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("path", [_public(p) for p in PUBLIC_FILES] or [pytest.param(None, id="none")])
def test_public_scenarios_pass_the_quality_gate(path, tmp_path):
    _require_public_files()
    out = tmp_path / "report.json"
    call_command("memory_eval", str(path), "--in-place", "--quiet", "--json", str(out), *GATE)
    report = json.loads(out.read_text())
    assert report["file"] == path.name and len(report["cases"]) == len(load_cases(str(path)))
    assert set(report["metrics"]) >= {"probe_pass_rate", "expect_hit_rate", "stale_injection_rate",
                                      "erasure_violation_rate", "entity_accuracy", "context_tokens_p95"}
    assert report["metrics"]["probe_pass_rate"] == 1.0 and not any(case.get("error") for case in report["cases"])


def _first_case_with_forbid(path: Path) -> dict:
    return next(case for case in load_cases(str(path))
                if any(step.get("forbid", {}).get("contains") for step in case["steps"] if step["op"] == "probe"))


@embedded_only
@pytest.mark.django_db(transaction=True)
def test_a_public_scenario_made_to_fail_makes_memory_eval_exit_non_zero(monkeypatch, tmp_path):
    """A double of recall ranks the case's forbidden (stale) value first: the gated run exits 1, as
    `manage.py memory_eval` does in CI. The same case without the double passes (positive control)."""
    _require_public_files()
    from django.core.management import execute_from_command_line

    from memory.api import views

    case = _first_case_with_forbid(SHARED)
    stale = next(step["forbid"]["contains"][0] for step in case["steps"] if step.get("forbid", {}).get("contains"))
    argv = ["manage.py", "memory_eval", str(SHARED), "--case", case["id"], "--in-place", "--quiet", *GATE]
    execute_from_command_line(argv)  # control: the gate holds on the real service

    real = views.recall_body

    def stale_first(result, *, explain):
        body = real(result, explain=explain)
        body["items"].insert(0, {**(body["items"][0] if body["items"] else {}), "id": 10**9, "kind": "preference",
                                 "assertion": "user_stated", "content": stale, "as": "current", "sources": []})
        return body

    monkeypatch.setattr(views, "recall_body", stale_first)
    with pytest.raises(SystemExit) as exited:
        execute_from_command_line(argv)
    assert exited.value.code == 1
    out = tmp_path / "report.json"
    with pytest.raises(CommandError, match=r"quality gate failed: .*stale_injection_rate<=0: measured 1\.0"):
        call_command("memory_eval", str(SHARED), "--case", case["id"], "--in-place", "--quiet", "--json", str(out), *GATE)
    failures = [f for c in json.loads(out.read_text())["cases"] for p in c["probes"] for f in p["failures"]]
    assert any(stale in f and "forbid" in f for f in failures), failures


def test_gates_parse_and_judge_a_report():
    report = {"cases": [{"id": "c1"}], "metrics": {"probe_pass_rate": 0.9, "stale_injection_rate": 0.0,
                                                   "erasure_violation_rate": None, "source_recall@10": 0.5}}
    assert gate_failures(report, []) == []
    assert gate_failures(report, [gate_parse("probe_pass_rate>=0.9"), gate_parse("stale_injection_rate<=0")]) == []
    assert gate_failures(report, [gate_parse("probe_pass_rate>=1")]) == ["probe_pass_rate>=1: measured 0.9"]
    assert gate_failures(report, [gate_parse("source_recall@10 >= 0.6")]) == ["source_recall@10>=0.6: measured 0.5"]
    # Null: nothing violated passes a ceiling, nothing shown fails a floor.
    assert gate_failures(report, [gate_parse("erasure_violation_rate<=0")]) == []
    assert "not measured" in gate_failures(report, [gate_parse("entity_accuracy>=1")])[0]
    errored = {**report, "cases": [{"id": "c2", "error": "HTTP 500"}]}
    assert gate_failures(errored, [gate_parse("stale_injection_rate<=0")]) == ["case c2 stopped with an error: HTTP 500"]
    for bad in ("probe_pass_rate>1", "pass_rate>=1", "probe_pass_rate>=x"):
        with pytest.raises(ValueError):
            gate_parse(bad)


def test_memory_eval_refuses_a_malformed_gate(tmp_path):
    with pytest.raises(CommandError, match="unknown metric 'pass_rate'"):
        call_command("memory_eval", _write(tmp_path, GOOD_CASE), "--in-place", "--quiet", "--gate", "pass_rate>=1")


def test_top_is_the_first_recalled_item_only():
    items = [item(1, "提醒改用微信", kind="preference"), item(2, "以后用短信提醒我", kind="episode")]
    assert checks.check_top("微信", items) == []
    assert checks.check_top(["微信", "提醒"], items) == []  # a list: all in that one item
    assert checks.check_top("短信", items)  # recalled, but not first
    assert checks.check_top(["微信", "短信"], items)  # split across two items is not enough
    assert checks.check_top("微信", [])


def test_standing_ignores_episodes():
    episode_only = [item(1, "以后用微信提醒我", kind="episode")]
    assert checks.check_standing(["微信"], episode_only)
    assert checks.check_standing(["微信"], episode_only + [item(2, "提醒方式：微信", kind="preference")]) == []


def _write(tmp_path, *cases):
    path = tmp_path / "cases.jsonl"
    path.write_text("\n".join(json.dumps(c, ensure_ascii=False) for c in cases) + "\n", encoding="utf-8")
    return str(path)


GOOD_CASE = {"id": "ok-01", "org": "o", "user": "u1", "steps": [
    {"op": "message", "session": "s1", "at": "2026-03-01T09:00:00+08:00", "role": "user", "content": "你好"},
    {"op": "probe", "label": "p1", "at": "2026-03-02T09:00:00+08:00", "session": "s1", "query": "q",
     "expect": {"top": ["a"], "standing": ["b"], "entity": {"ambiguous": ["X"]}},
     "forbid": {"contains": ["c"]}, "erased": {"contains": ["d"]}}]}


@pytest.mark.parametrize("mutate, needle", [
    (lambda c: c["steps"].append({"op": "teleport", "session": "s1"}), "unknown op 'teleport'"),
    (lambda c: c["steps"][0].update(mood="happy"), "unknown field(s) ['mood']"),
    (lambda c: c["steps"][1]["expect"].update(first=["a"]), "unknown expect key(s) ['first']"),
    (lambda c: c["steps"][1]["forbid"].update(regex=["a"]), "unknown forbid key(s) ['regex']"),
    (lambda c: c["steps"][1]["erased"].update(labels=["m1"]), "unknown erased key(s) ['labels']"),
    (lambda c: c["steps"][1]["expect"].update(items=[{"contains": "a", "score": 1}]), "expect.items[0]"),
    (lambda c: c["steps"][1]["expect"].update(entity={"maybe": ["X"]}), "expect.entity"),
    (lambda c: c.update(tags=["x"]), "unknown case field(s) ['tags']"),
    (lambda c: c["steps"][0].pop("session"), "missing field(s) ['session']"),
])
def test_runner_refuses_unknown_ops_fields_and_keys_naming_the_case(tmp_path, mutate, needle):
    assert load_cases(_write(tmp_path, GOOD_CASE))  # the unmodified case is accepted
    bad = json.loads(json.dumps(GOOD_CASE))
    bad["id"] = "newer-02"
    mutate(bad)
    with pytest.raises(ScenarioFormatError) as info:
        load_cases(_write(tmp_path, GOOD_CASE, bad))
    assert "case 'newer-02'" in str(info.value) and needle in str(info.value)


def test_memory_eval_command_refuses_a_newer_file(tmp_path):
    bad = json.loads(json.dumps(GOOD_CASE))
    bad["steps"][1]["expect"]["rank_below"] = ["x"]
    with pytest.raises(CommandError, match="ok-01.*rank_below"):
        call_command("memory_eval", _write(tmp_path, bad), "--in-place", "--quiet")


@pytest.mark.parametrize("path", [_public(p) for p in PUBLIC_FILES] or [pytest.param(None, id="none")])
def test_public_files_are_valid(path):
    _require_public_files()
    assert load_cases(str(path))


@pytest.mark.django_db(transaction=True)
def test_json_report_has_each_probes_source_recall(tmp_path):
    case = {"id": "src-01", "org": "o", "user": "u1", "steps": [
        {"op": "message", "session": "s1", "at": "2026-03-01T09:00:00+00:00", "role": "user", "ref": "D1:1",
         "content": "Caroline: I adopted a grey cat named Pixel last spring."},
        {"op": "message", "session": "s1", "at": "2026-03-01T09:01:00+00:00", "role": "user", "ref": "D1:2",
         "content": "Melanie: The weather at the lake was lovely."},
        {"op": "probe", "label": "q0-single-hop", "at": "2026-03-02T09:00:00+00:00", "session": "q",
         "query": "What is the name of Caroline's cat?", "k": 1, "expect": {"sources": ["D1:1", "D9:9"]}}]}
    out = tmp_path / "report.json"
    call_command("memory_eval", _write(tmp_path, case), "--in-place", "--quiet", "--source-ks", "1,5",
                 "--json", str(out))
    probe = json.loads(out.read_text())["cases"][0]["probes"][0]
    assert probe["source_recall"] == {"1": 0.5, "5": 0.5}  # D1:1 found, D9:9 never said


def test_the_throwaway_run_keeps_its_database_as_the_service_does(tmp_path):
    """On SQLite the run's own database is a file in WAL mode with the busy timeout, not Django's shared-cache
    memory database, where a write beside a background thread's read failed at once ("database table is
    locked") and an eager projection was lost with it. A fresh process: the command swaps the database."""
    import os
    import subprocess
    import sys

    script = (
        "import django; django.setup()\n"
        "from django.db import connection\n"
        "from evaluation.management.commands.memory_eval import Command\n"
        "cleanup = Command()._isolate()\n"
        "name = connection.settings_dict['NAME']\n"
        "with connection.cursor() as c:\n"
        "    c.execute('PRAGMA journal_mode'); mode = c.fetchone()[0]\n"
        "cleanup()\n"
        "import os; print(name, mode, os.path.exists(name))\n")
    env = {**os.environ, "MEMORY_VAR_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "config.settings"}
    env.pop("DATABASE_URL", None)
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr[-2000:]
    name, mode, exists_after = done.stdout.split()[-3:]
    assert name.endswith("eval.sqlite3") and mode == "wal"
    assert exists_after == "False"  # dropped with the run
