"""The echo detector of forget (memory/services/forget_echoes.py) on its labelled pair set, with the
real embedding model: every echo found, nothing on the same topic that says something else."""
import json
from pathlib import Path

import numpy as np
import pytest

from common.text import is_cjk
from memory.services.forget_echoes import codes, echo_score, grams, identifiers, is_echo

PAIRS = Path(__file__).resolve().parents[2] / "evaluation" / "data" / "echo_pairs.jsonl"
pytestmark = pytest.mark.django_db


def test_scores_separate_echoes_from_same_topic_sentences():
    from memory.vectors import active_embedder, similarity

    embedder = active_embedder()
    rows = [json.loads(line) for line in PAIRS.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert sum(r["echo"] for r in rows) >= 15 and sum(not r["echo"] for r in rows) >= 15
    wrong = []
    for row in rows:
        fact, text = embedder.encode_one(row["fact"]), embedder.encode_one(row["text"])
        cosine = float(similarity(embedder, fact, np.vstack([text]), cjk=is_cjk(row["fact"]))[0])
        if is_echo(cosine, row["fact"], row["text"]) != row["echo"]:
            wrong.append((row["text"], round(echo_score(cosine, row["fact"], row["text"]), 3)))
    assert not wrong


def test_other_numbers_are_not_an_echo():
    assert codes("1号收割机的割台有异响") == {"1"}
    assert echo_score(0.9, "1号收割机的割台有异响", "2号收割机的割台有异响") == 0.0
    assert echo_score(0.5, "钥匙柜密码是58372", "好的，钥匙柜密码 58372") > 1.0
    assert "58372" in grams("密码 58372")


def test_a_repeated_identifier_is_an_echo_whatever_the_wording():
    fact = "我家住7栋2单元1803"
    assert identifiers(fact) == {"1803"}
    assert is_echo(0.1, fact, "帮我写个快递备注，地址就是1803那个，放门口就行")
    assert identifiers("My gym locker combo is 27-14-33") == {"27-14-33"}
    assert identifiers("2026年3月的体检") == set()  # a year is a date, not an identifier
    assert identifiers("下午4pm开会，带3.5公斤") == set()
    # An episode lists several values: which one was meant cannot be told, so none decides alone.
    assert echo_score(0.1, "门禁4471，车位B2-087", "车位是B2-087", by_identifier=False) < 1.0
    assert not is_echo(0.1, fact, "我家住7栋2单元1802")
