"""The evaluator treats an item marked `"as": "history"` like a dated episode (FORMAT.md, "Current and
history"): it may hold a forbidden value, it does not satisfy `expect.standing`, and erased still applies."""
from evaluation import checks


def item(id, content, kind="fact", presented_as=None):
    out = {"id": id, "content": content, "kind": kind, "assertion": "user_stated", "sources": []}
    if presented_as is not None:
        out["as"] = presented_as
    return out


def test_a_history_item_may_hold_a_forbidden_value():
    history = [item(1, "配件供应商是华信", presented_as="history"), item(2, "配件供应商改成大陆了", kind="event",
                                                                   presented_as="current")]
    assert checks.check_forbid({"contains": ["华信"]}, history, None, {}) == []
    assert checks.check_forbid({"contains": ["华信"]}, [item(1, "配件供应商是华信", presented_as="current")], None, {})
    # A service that does not mark items (no "as" field) is read as before: the item is standing.
    assert checks.check_forbid({"contains": ["华信"]}, [item(1, "配件供应商是华信")], None, {})


def test_forbid_labels_ignore_history_items():
    labels = {"old": 1}
    assert checks.check_forbid({"labels": ["old"]}, [item(1, "x", presented_as="history")], None, labels) == []
    assert checks.check_forbid({"labels": ["old"]}, [item(1, "x", presented_as="current")], None, labels)


def test_a_history_item_does_not_satisfy_standing_or_count_for_unique():
    assert checks.check_standing(["华信"], [item(1, "配件供应商是华信", presented_as="history")])
    assert checks.check_standing(["大陆"], [item(2, "配件供应商改成大陆了", presented_as="current")]) == []
    both = [item(1, "供应商 华信", presented_as="history"), item(2, "供应商 华信 大陆", presented_as="current")]
    assert checks.check_unique(["华信"], both) == []


def test_erased_still_applies_to_history_items():
    assert checks.check_erased({"contains": ["华信"]}, [item(1, "配件供应商是华信", presented_as="history")], None)
