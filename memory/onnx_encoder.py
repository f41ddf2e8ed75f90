"""Run a sentence-transformers BERT model (Transformer → mean Pooling → Normalize) on ONNX Runtime.

Why: one query through PyTorch eager costs ~14 ms for MiniLM on these cores, and the query
embedding is most of every recall and context call; ONNX Runtime computes the same vector
(cosine ≥ 0.99999 to PyTorch's) in ~5 ms. The graph is exported once from the loaded model with
torch's own exporter and kept under `EMBEDDING_ONNX_DIR`, keyed by the model files' fingerprint,
so an upgraded model is exported again. Anything unexpected (another pooling, a missing package, an
export error) returns None and the caller keeps PyTorch: never a wrong vector, only a slower one.
"""
from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from pathlib import Path

import numpy as np

logger = logging.getLogger(__name__)

_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def _standard_layout(model) -> bool:
    """Only [Transformer, Pooling(mean), Normalize] is reproduced here."""
    modules = list(model)
    if len(modules) != 3 or type(modules[2]).__name__ != "Normalize":
        return False
    pooling = modules[1]
    # sentence-transformers 5 names the mode in `pooling_mode`; older releases used flags.
    mode = getattr(pooling, "pooling_mode", None)
    mean = mode == "mean" if mode is not None else bool(getattr(pooling, "pooling_mode_mean_tokens", False))
    return mean and getattr(pooling, "include_prompt", True) and hasattr(modules[0], "auto_model")


def _fingerprint(model_path: str) -> str:
    digest = hashlib.sha256()
    for path in sorted(Path(model_path).rglob("*")):
        if path.is_file() and path.suffix in {".json", ".safetensors", ".bin", ".txt"}:
            stat = path.stat()
            digest.update(f"{path.relative_to(model_path)}:{stat.st_size}:{int(stat.st_mtime)}".encode())
    return digest.hexdigest()[:16]


def _export(model, target: Path) -> None:
    import torch

    bert = model[0].auto_model.eval()

    class _Hidden(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.inner(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).last_hidden_state

    sample = model.tokenizer(["export sample 导出样例"], return_tensors="pt")
    axes = {name: {0: "batch", 1: "tokens"} for name in (*_INPUTS, "last_hidden_state")}
    target.parent.mkdir(parents=True, exist_ok=True)
    # Export next to the target, then rename: a concurrent process never opens a half-written file.
    fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".onnx.tmp")
    os.close(fd)
    try:
        with torch.no_grad():
            torch.onnx.export(_Hidden(bert), tuple(sample[name] for name in _INPUTS), tmp, input_names=list(_INPUTS),
                              output_names=["last_hidden_state"], dynamic_axes=axes, opset_version=17, dynamo=False)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


_CHUNK = 8  # texts per run once sorted by length


class OnnxSentenceEncoder:
    def __init__(self, model, session, max_length: int) -> None:
        self._tokenizer = model.tokenizer
        self._session = session
        self._max_length = max_length

    def encode(self, texts: list[str]) -> np.ndarray:
        """Texts of similar length are run together: a batch is padded to its longest text, so one long
        episode among short statements made every row of the batch cost as much as it (the usual
        length sorting of sentence-transformers). Rows come back in the order given."""
        texts = list(texts)
        if len(texts) <= _CHUNK:
            return self._encode(texts)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.empty((len(texts), 0), dtype=np.float32)
        for start in range(0, len(order), _CHUNK):
            chunk = order[start:start + _CHUNK]
            vectors = self._encode([texts[i] for i in chunk])
            if out.shape[1] == 0:
                out = np.empty((len(texts), vectors.shape[1]), dtype=np.float32)
            out[chunk] = vectors
        return out

    def _encode(self, texts: list[str]) -> np.ndarray:
        batch = self._tokenizer(texts, padding=True, truncation=True, max_length=self._max_length,
                                return_tensors="np")
        feed = {name: np.asarray(batch[name], dtype=np.int64) for name in _INPUTS}
        hidden = self._session.run(None, feed)[0]
        mask = feed["attention_mask"][..., None].astype(np.float32)
        pooled = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)


def _quantize(source: Path, target: Path) -> None:
    """Weights to int8, one scale per output channel (per-tensor scales moved a query's vector to
    cosine ~0.96 of the float one; per channel keeps ≥ 0.99)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".onnx.tmp")
    os.close(fd)
    try:
        quantize_dynamic(source, tmp, per_channel=True, weight_type=QuantType.QInt8)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _session(path: Path, threads: int):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def onnx_encoder_for(model, model_path: str, cache_dir: str, threads: int,
                     quantized: bool = False) -> OnnxSentenceEncoder | None:
    """`quantized`: the int8 graph of the same model (the query encoder, memory/embeddings.py)."""
    try:
        if not _standard_layout(model) or "token_type_ids" not in model.tokenizer(["probe"]):
            logger.info("onnx: model layout not supported; using pytorch")
            return None
        target = Path(cache_dir) / f"{Path(model_path.rstrip('/')).name}-{_fingerprint(model_path)}.onnx"
        if not target.exists():
            _export(model, target)
            logger.info("onnx: exported %s", target.name)
        if quantized:
            source, target = target, target.with_suffix(".int8.onnx")
            if not target.exists():
                _quantize(source, target)
                logger.info("onnx: quantized %s", target.name)
        return OnnxSentenceEncoder(model, _session(target, threads), int(getattr(model, "max_seq_length", 256) or 256))
    except Exception as exc:  # a missing package or a failed export costs speed, never vectors
        logger.warning("onnx: %s unavailable (%s)", "int8 graph" if quantized else "graph", type(exc).__name__)
        return None
