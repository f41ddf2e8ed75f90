"""Everyday change wording: does a later statement that a preference or fact changed replace the old one?

    python -m bench.changes                   # the report half, in process: extraction + subject judge
    python -m bench.changes --split tune      # the tuning half (the only one to look at while tuning)
    python -m bench.changes --split report3   # another held-out set (report2 and report3: see below)
    python -m bench.changes --http http://127.0.0.1:8000   # through a running service (`make run`), recall included
    python -m bench.changes --crowd           # each newer statement against every older one of the split
    python -m bench.changes --errors          # list every pair with its outcome
    python -m bench.changes --learned         # in process, the learned judge (memory/learn) instead

The set (`evaluation/data/changes-{tune,report}.jsonl`): `change` pairs (an older standing statement,
a newer message saying in everyday words that it changed, a question whose answer is the new value)
and `other_attribute` pairs (the newer is about the same thing but another attribute: it must replace
nothing). The tuning half was written first and looked at while building the now-state reading
(decisions D17); the report half was written afterwards by another author who saw neither the code
nor the tuning half. `report2` and `report3` (40 change, 20 other-attribute pairs each) were written
later by two more helper sessions that saw neither the code nor the other sets; report2 was looked at
while building the second step of D17, report3 only for the figures in docs/evaluation.md.

In process, each pair is read by the rule extractor and the newer's first standing candidate is judged
against the older's (memory/subjects): supersede, possible conflict (both kept, the newer first),
coexist, or one side not extracted. Over HTTP each pair gets a fresh user: the two messages, then a
recall of the question; "current first" = the first item naming the new value ranks first, "old still
stated" = a memory still states the old value as current (an episode, or an item the service marks
`"as": "history"`, counts only when it ranks above the new value). Other-attribute pairs over HTTP are
recalled with the older statement as the query: an older one marked as history there is a false one.
"""
from __future__ import annotations

import json
import sys
import time
import urllib.request
import uuid
from collections import Counter
from pathlib import Path

from bench import common

DATA = Path(__file__).resolve().parents[1] / "evaluation" / "data"


def load(split: str) -> list[dict]:
    path = DATA / f"changes-{split}.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


# ---------------------------------------------------------------------------- in process
def judge_pairs(rows: list[dict], crowd: bool = False, learned: bool = False) -> list[tuple[str, int]]:
    from datetime import datetime, timezone

    from common.text import is_cjk
    from memory.extraction.base import ExtractionInput
    from memory.extraction.rules import RuleExtractor
    from memory.services.subject_tier import subject_decisions
    from memory.subjects.judge import Existing
    from memory.thresholds import thresholds_for
    from memory.vectors import active_embedder, similarity

    embedder = active_embedder()
    limits = thresholds_for(embedder.model_id)
    extractor = RuleExtractor()
    at = datetime(2026, 5, 12, 2, 0, tzinfo=timezone.utc)

    def standing(text):
        result = extractor.extract(ExtractionInput(role="user", content=text, occurred_at=at))
        return [c for c in result.candidates if c.kind in ("fact", "preference") and c.scope == "user"]

    olders = [standing(row["older"]) for row in rows]
    vectors = {}

    def vector(text):
        if text not in vectors:
            vectors[text] = embedder.encode([text])[0]
        return vectors[text]

    def existing_for(indices, newer_text):
        out = []
        for i in indices:
            o = olders[i][0]
            cjk = is_cjk(o.content) or is_cjk(newer_text)
            full = float(similarity(embedder, vector(newer_text), vector(o.content), cjk=cjk)[0])
            out.append(Existing(id=i, content=o.content, kind=o.kind, slot_key=o.slot_key, full=full))
        return out

    out = []
    for i, row in enumerate(rows):
        newer = standing(row["newer"])
        if not olders[i] or not newer:
            out.append(("older not extracted" if not olders[i] else "newer not extracted", 0))
            continue
        n = newer[0]
        # Crowd: the user holds every older statement of the set (as the write path compares a new
        # statement with every standing memory in its window); a decision against another row's older
        # statement is a wrong target.
        indices = [j for j in range(len(rows)) if olders[j]] if crowd else [i]
        existing = existing_for(indices, n.content)
        if learned:  # the same candidates and cosines, judged by the learned judge alone
            from memory.learn.judge import Existing as Learned
            from memory.learn.judge import judge as learned_judge

            decisions = {e.id: d for e, d in learned_judge(
                content=n.content, kind=n.kind,
                existing=[Learned(e.id, e.content, e.kind, cosine=e.full) for e in existing])}
        else:  # the write path's own subject tier: the subject rules, then the learned judge's second opinions
            decisions = subject_decisions(n, [(e, e.full) for e in existing], limits)
        wrong = sum(1 for j, d in decisions.items() if j != i and d.action in ("supersede", "conflict"))
        out.append((decisions[i].action, wrong))
    return out


# ---------------------------------------------------------------------------- over HTTP
def _call(base: str, key: str, user: str, method: str, path: str, body=None):
    req = urllib.request.Request(base + path, method=method,
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Authorization": f"Bearer {key}", "X-Memory-User": user,
                                          "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read())


def _extracted(base: str, timeout: float = 60.0) -> None:
    """Wait until the service has extracted every committed message (/readyz, checks.extraction)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(base + "/readyz", timeout=10) as r:
                ready = json.loads(r.read())
        except urllib.error.HTTPError as e:  # 503 while a check fails: its body still says what is pending
            ready = json.loads(e.read())
        if not (ready.get("checks", {}).get("extraction", {}).get("messages") or 0):
            return
        time.sleep(0.2)
    raise SystemExit("extraction did not catch up within 60 s")


def _replay(rows: list[dict], base: str, key: str, name: str) -> list[str]:
    """Each pair for a fresh user: the older message, then (a month later) the newer one."""
    tag = uuid.uuid4().hex[:8]
    users = []
    for i, row in enumerate(rows):
        user = f"{name}-{tag}-{i}"
        conv = _call(base, key, user, "POST", "/api/v1/conversations", {"external_id": f"{name}-{tag}-{i}"})
        _call(base, key, user, "POST", f"/api/v1/conversations/{conv['id']}/messages",
              {"role": "user", "content": row["older"], "occurred_at": "2026-03-01T09:00:00+08:00"})
        _extracted(base)
        _call(base, key, user, "POST", f"/api/v1/conversations/{conv['id']}/messages",
              {"role": "user", "content": row["newer"], "occurred_at": "2026-04-01T09:00:00+08:00"})
        users.append(user)
    _extracted(base)
    return users


def http_pairs(rows: list[dict], base: str, key: str) -> list[tuple[bool, bool]]:
    users = _replay(rows, base, key, "changes")
    out = []
    for row, user in zip(rows, users):
        items = _call(base, key, user, "POST", "/api/v1/recall", {"query": row["query"], "k": 5})["items"]
        first_new = next((k for k, it in enumerate(items) if row["newer_marker"] in it["content"]), None)
        # An episode or an item marked as history (`"as": "history"`) shows the old value as what was
        # said then: it states it only when it ranks above the new value.
        old_stated = any(row["older_marker"] in it["content"] and (_standing(it) or first_new is None or k < first_new)
                         for k, it in enumerate(items))
        out.append((first_new == 0, old_stated))
    return out


def _standing(item: dict) -> bool:
    return item["kind"] != "episode" and item.get("as", "current") != "history"


def http_others(rows: list[dict], base: str, key: str) -> int:
    """Other-attribute pairs through the service, recalled with the older statement itself as the
    query: how many of the older statements the service wrongly presents as history."""
    wrong = 0
    for user, row in zip(_replay(rows, base, key, "others"), rows):
        items = _call(base, key, user, "POST", "/api/v1/recall", {"query": row["older"], "k": 5})["items"]
        wrong += any(it.get("as") == "history" and it["kind"] != "episode" for it in items)
    return wrong


def main(argv=None) -> int:
    p = common.arg_parser("changes", __doc__.split("\n\n")[0])
    p.add_argument("--split", default="report", choices=sorted(f.stem.removeprefix("changes-") for f in DATA.glob("changes-*.jsonl")))
    p.add_argument("--http", metavar="URL", help="a running service (make run): measure recall through it")
    p.add_argument("--key-file", default="var/demo_api_key.txt", help="API key for --http (make run writes this one)")
    p.add_argument("--crowd", action="store_true",
                   help="in process: judge each newer statement against every older statement of the split at once")
    p.add_argument("--learned", action="store_true", help="in process: the learned judge (memory/learn) decides")
    p.add_argument("--errors", action="store_true")
    args = p.parse_args(argv)
    rows = load(args.split)
    changes = [r for r in rows if r["label"] == "change"]
    others = [r for r in rows if r["label"] == "other_attribute"]
    if args.http:
        key = Path(args.key_file).read_text().strip()
        res = http_pairs(changes, args.http.rstrip("/"), key)
        first = sum(f for f, _ in res)
        clean = sum(f and not s for f, s in res)
        stated = sum(s for _, s in res)
        print(f"split={args.split} change pairs={len(changes)} over HTTP ({args.http})")
        print(f"current first {first}/{len(changes)}; current first and old no longer stated {clean}/{len(changes)}; "
              f"old still stated {stated}/{len(changes)}")
        if others:
            print(f"other-attribute pairs: older wrongly presented as history {http_others(others, args.http.rstrip('/'), key)}"
                  f"/{len(others)} (query: the older statement)")
        if args.errors:
            for r, (f, s) in zip(changes, res):
                print(f"  {r['id']:<18} first={f!s:<5} old_stated={s!s:<5} {r['older']} | {r['newer']}")
        return 0
    common.setup("changes", args)  # a fresh var dir: the judge's embedder, nothing of a running service
    got = judge_pairs(changes + others, crowd=args.crowd, learned=args.learned)
    got_changes, got_others = got[:len(changes)], got[len(changes):]
    judged_by = "learned judge alone" if args.learned else "the write path's subject tier"
    print(f"split={args.split} in process (rule extractor + {judged_by}){' crowd' if args.crowd else ''}")
    print(f"change pairs ({len(changes)}):", dict(Counter(g for g, _ in got_changes)))
    print(f"other-attribute pairs ({len(others)}):", dict(Counter(g for g, _ in got_others)))
    if args.crowd:
        print(f"wrong targets (another row's older statement superseded or flagged): "
              f"{sum(w for _, w in got)} over {len(got)} newer statements")
    if args.errors:
        for r, (g, w) in zip(changes + others, got):
            print(f"  {r['id']:<18} {g:<20} wrong={w} {r['older']} | {r['newer']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
