import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from conversations.tokens import (
    MESSAGE_OVERHEAD_TOKENS,
    REPLY_PRIMING_TOKENS,
    _count_cached,
    count_message_tokens,
    count_messages_tokens,
    count_prefixed,
    count_tokens,
    get_encoding,
    truncate_to_tokens,
)

PROJECT_ROOT = Path(__file__).resolve().parents[2]

# Runs in a fresh interpreter: the encoding cache is per process, and the network is cut
# so that any download attempt fails the test instead of quietly succeeding.
_OFFLINE_SCRIPT = textwrap.dedent(
    """
    import json, os, socket, sys

    def no_network(*args, **kwargs):
        raise OSError("network disabled in this test")

    socket.getaddrinfo = no_network
    socket.socket.connect = no_network

    from django.conf import settings
    settings.configure(TIKTOKEN_CACHE_DIR=sys.argv[1], TOKEN_ENCODING=sys.argv[2])

    from conversations.tokens import count_tokens, get_encoding
    print(json.dumps({
        "hello": count_tokens("hello world"),
        "name": get_encoding().name,
        "cache_env": os.environ["TIKTOKEN_CACHE_DIR"],
    }))
    """
)


def _run_offline(cache_dir: Path, encoding: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in {"DJANGO_SETTINGS_MODULE", "TIKTOKEN_CACHE_DIR"}}
    env["PYTHONPATH"] = str(PROJECT_ROOT)
    completed = subprocess.run(
        [sys.executable, "-c", _OFFLINE_SCRIPT, str(cache_dir), encoding],
        capture_output=True, text=True, env=env, cwd=PROJECT_ROOT, timeout=120, check=False,
    )
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    ("encoding", "cache_name", "sha256"),
    [
        ("cl100k_base", "9b5ad71b2ce5302211f9c61530b329a4922fc6a4",
         "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"),
        ("o200k_base", "fb374d419588a4632f3f557e76b4b70aebbca790",
         "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"),
    ],
)
def test_encoding_loads_offline_from_the_bundled_file(tmp_path, encoding, cache_name, sha256):
    cache_dir = tmp_path / "tiktoken"

    out = _run_offline(cache_dir, encoding)

    assert out == {"hello": 2, "name": encoding, "cache_env": str(cache_dir)}
    assert hashlib.sha256((cache_dir / cache_name).read_bytes()).hexdigest() == sha256
    # A second process reuses the unzipped file.
    assert _run_offline(cache_dir, encoding)["hello"] == 2
    assert sorted(p.name for p in cache_dir.iterdir()) == [cache_name]


def test_corrupt_cache_file_is_replaced(tmp_path):
    cache_dir = tmp_path / "tiktoken"
    cache_dir.mkdir()
    (cache_dir / "fb374d419588a4632f3f557e76b4b70aebbca790").write_bytes(b"garbage")

    assert _run_offline(cache_dir, "o200k_base")["hello"] == 2


def test_unknown_encoding_is_refused_rather_than_downloaded():
    with pytest.raises(ValueError, match="not available offline"):
        get_encoding("p50k_base")


def test_get_encoding_is_cached_per_process():
    assert get_encoding() is get_encoding()
    assert get_encoding("cl100k_base") is get_encoding("cl100k_base")


def test_count_tokens():
    assert count_tokens("") == 0
    assert count_tokens("hello world") == 2
    assert count_tokens("帮我安排1号收割机的保养") > 3
    # Special-token text in user content is counted as text, not rejected.
    assert count_tokens("<|endoftext|>") > 1


def test_count_message_tokens_adds_the_fixed_overhead():
    message = {"role": "user", "content": "hello world"}

    assert count_message_tokens(message) == 2 + MESSAGE_OVERHEAD_TOKENS
    assert count_message_tokens({"role": "assistant", "content": None}) == MESSAGE_OVERHEAD_TOKENS


def test_count_message_tokens_counts_tool_calls_and_ids():
    tool_calls = [{"id": "call_1", "type": "function",
                   "function": {"name": "get_records", "arguments": '{"asset_id":"A-1001"}'}}]
    call = {"role": "assistant", "content": "", "tool_calls": tool_calls}
    result = {"role": "tool", "content": "ok", "tool_call_id": "call_1"}

    serialised = json.dumps(tool_calls, ensure_ascii=False, separators=(",", ":"))
    assert count_message_tokens(call) == count_tokens(serialised) + MESSAGE_OVERHEAD_TOKENS
    assert count_message_tokens(result) == count_tokens("ok") + count_tokens("call_1") + MESSAGE_OVERHEAD_TOKENS


def test_count_message_tokens_accepts_content_parts():
    message = {"role": "user", "content": [{"type": "text", "text": "hello world"}]}

    assert count_message_tokens(message) == 2 + MESSAGE_OVERHEAD_TOKENS


def test_count_messages_tokens_adds_reply_priming():
    messages = [{"role": "system", "content": "hello world"}, {"role": "user", "content": "hello world"}]

    assert count_messages_tokens(messages) == 2 * (2 + MESSAGE_OVERHEAD_TOKENS) + REPLY_PRIMING_TOKENS


def test_truncate_keeps_short_text_and_empties_on_zero():
    assert truncate_to_tokens("hello world", 2) == "hello world"
    assert truncate_to_tokens("hello world", 0) == ""
    assert truncate_to_tokens("hello world", -3) == ""
    assert truncate_to_tokens("hello world", 1) == "hello"


def test_truncate_never_splits_a_multibyte_character():
    text = "😀🐉東區維修棚𠀀" * 20
    for limit in range(1, 40):
        cut = truncate_to_tokens(text, limit)
        assert "\ufffd" not in cut
        assert text.startswith(cut)
        assert count_tokens(cut) <= limit


@hypothesis_settings(max_examples=150, deadline=None)
@given(
    text=st.text(alphabet=st.sampled_from(list("ab Z9,.\n的是东区维修棚😀🐉é𠀀")), max_size=300),
    limit=st.integers(min_value=0, max_value=80),
)
def test_truncate_property(text, limit):
    cut = truncate_to_tokens(text, limit)

    assert text.startswith(cut)
    assert count_tokens(cut) <= max(limit, 0)
    if count_tokens(text) <= limit:
        assert cut == text


# Edges of the encoder's pieces: spaces and newlines on either side, contractions, digits, marks,
# emoji, text that spells a special token.
_PIECE_EDGES = list("ab Z9 0\n\r\t.,;:!?()[]/-#。，液压油滤芯😀é\u0301'") + ["'s", "'ll", "  ", "\n\n", " \n", "<|endoftext|>"]


@pytest.fixture(params=["o200k_base", "cl100k_base"])
def encoding_name(request, settings):
    settings.TOKEN_ENCODING = request.param
    _count_cached.cache_clear()  # the count cache is per process and assumes one encoding
    yield request.param
    _count_cached.cache_clear()


@hypothesis_settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(prefix=st.lists(st.sampled_from(_PIECE_EDGES), max_size=4).map("".join),
       text=st.lists(st.sampled_from(_PIECE_EDGES), max_size=30).map("".join))
def test_count_prefixed_is_the_count_of_the_joined_text(encoding_name, prefix, text):
    assert get_encoding().name == encoding_name
    expected = len(get_encoding().encode(prefix + text, disallowed_special=()))
    assert count_prefixed(prefix, text, count_tokens(text)) == expected


def test_count_prefixed_reencodes_only_the_leading_pieces():
    text = "液压油每工作500小时更换一次。" * 40
    # A wrong count for the text shows up unchanged: the rest of the text is not encoded again.
    assert count_prefixed(" ", text, count_tokens(text) + 1000) == count_tokens(" " + text) + 1000
