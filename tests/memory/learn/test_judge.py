"""The learned judge (memory/learn/judge.py, D25): its guards, and what it decides on pairs none of
which is in its training data."""
import numpy as np
import pytest

from memory.learn.judge import Existing, judge, judge_pairs
from memory.learn.judge_model import load_model
from memory.learn.pair_features import PairInput, mask_values


def action(older, newer, older_kind="fact", newer_kind="fact", scopes=None):
    [d] = judge_pairs([PairInput(older, newer, older_kind, newer_kind)], scopes=scopes)
    return d


def test_events_never_replace_events():
    d = action("上周六带孩子去了动物园。", "这周六带孩子去了海洋馆。", "event", "event")
    assert (d.action, d.reason) == ("coexist", "events never replace events")


def test_task_scope_never_replaces_user_scope():
    d = action("以后回复我都用中文。", "这次先用英文回复我。", "preference", "preference", scopes=[("user", "task")])
    assert (d.action, d.reason) == ("coexist", "task scope never replaces user scope")


@pytest.mark.parametrize("older,newer", [
    ("1号冷库的温度设在零下十八度。", "2号冷库的温度设在零下二十五度。"),
    ("Caroline: I live in Boston.", "Melanie: I live in Denver."),
])
def test_different_things_coexist(older, newer):
    assert action(older, newer).action == "coexist"


@pytest.mark.parametrize("older,newer", [
    ("I take 10mg of atorvastatin every night.", "My doctor bumped my atorvastatin up to 20mg."),
    ("我每天早上跑步五公里。", "最近改成每天早上跑十公里了。"),
])
def test_a_number_change_replaces(older, newer):
    assert action(older, newer).action == "supersede"


@pytest.mark.parametrize("older,newer", [
    ("我对花生过敏。", "另外我对青霉素也过敏。"),
    ("We have a Golden Retriever named Max.", "We also got a cat last month, her name is Luna."),
])
def test_an_addition_coexists(older, newer):
    assert action(older, newer).action == "coexist"


def test_a_duplicate_in_other_words_is_a_duplicate():
    # Public case v-dup-01: the same preference said again, in other words.
    assert action("我不吃香菜", "香菜我是一口都不碰的，点菜的时候记着点", "preference", "preference").action == "duplicate"


def test_a_replace_between_transcript_lines_is_read_without_their_speaker_labels():
    """A transcript line's speaker label is the guards' (another speaker is never the same memory);
    a replace between one speaker's two lines is decided as if they were said without labels, so a
    shared label does not make two remarks one subject."""
    older, newer = "Pottery is a huge part of my life.", "Started when I was young and it's been great."
    labelled = action(f"Melanie: {older}", f"Melanie: {newer}")
    plain = action(older, newer)
    assert plain.action != "supersede"
    assert (labelled.action, labelled.reason) == (plain.action, "model")
    assert labelled.proba == pytest.approx(plain.proba)
    assert action(f"Caroline: {older}", f"Melanie: {newer}").reason == "another thing or person"


def test_the_judge_computes_its_own_features():
    """The caller's cosine only picks which memories are judged; it never changes a decision."""
    old = "我不吃香菜"
    new = "香菜我是一口都不碰的，点菜的时候记着点"
    a = judge(content=new, kind="preference", existing=[Existing(1, old, "preference", cosine=0.99)])
    b = judge(content=new, kind="preference", existing=[Existing(1, old, "preference", cosine=0.10)])
    assert a[0][1] == b[0][1]


def test_one_value_is_replaced():
    older = [Existing(1, "我每天早上跑步五公里。", "fact", cosine=0.8),
             Existing(2, "我每天早上跑步五公里，一般在江边跑。", "fact", cosine=0.7)]
    decisions = dict((e.id, d.action) for e, d in judge(content="最近改成每天早上跑十公里了。", kind="fact", existing=older))
    assert list(decisions.values()).count("supersede") <= 1


def test_masking_replaces_values():
    assert "18" not in mask_values("三号冷库的温度设在零下18度。")
    assert "20.04" not in mask_values("Our staging server runs on Ubuntu 20.04.")


def test_the_committed_model_is_plain_arrays():
    model = load_model()
    assert model.labels == ("coexist", "duplicate", "supersede")
    x = np.zeros((2, model.vector_width), dtype=np.float32)
    from memory.learn.pair_features import scalar_names

    p = model.proba(model.inputs(np.zeros((2, len(scalar_names()))), x))
    assert p.shape == (2, 3) and np.allclose(p.sum(axis=1), 1.0)


def test_the_tuning_half_reads_the_extra_pairs_beside_it():
    from memory.learn.judge_train import load

    tune, report = load("tune"), load("report")
    assert any(r["id"].startswith("x21-") for r in tune)
    assert not {r["id"] for r in tune} & {r["id"] for r in report}
