"""The index stage: encode a corpus and its queries into sparse vectors (CSR) with a SparseEncoder.

Two paths give the same vectors:

* the **fast path** (used whenever the model is recognised): sentence-transformers' own
  tokenisation (same prompts, same query/document max lengths, same length-sorted batches),
  the backbone run to the *input of the MLM decoder* (captured generically, for any
  ``*ForMaskedLM`` family, by temporarily replacing ``get_output_embeddings().forward``), then the
  decoder applied in vocabulary chunks with padding masked and the max over tokens taken
  *before* the monotone ``log1p(relu(.))``. The full ``[batch, tokens, vocab]`` logits are never
  materialised and ``log1p`` runs on ``[batch, vocab]`` only. The CSR is built from the non-zeros
  of each pooled batch, without a dense round trip of the whole corpus.
* the **plain path**: ``SparseEncoder.encode_query`` / ``encode_document`` chunk by chunk.

The fast path is taken only for a SparseEncoder made of exactly a fill-mask ``Transformer`` and
``SpladePooling('max', 'relu')`` whose decoder is a linear map and nothing follows it: every
call first runs a small probe through both paths and falls back (with a warning) if the decoder
input cannot be captured or the probe vectors disagree.

**Shards.** A document's vector depends (by float rounding, ~1e-6) on the batch it is encoded
in: its padded length changes the shapes of the backbone's matrix products. So a corpus is not
cut into contiguous slices encoded one by one (that would give other numbers than one call);
:class:`EncodePlan` fixes the one-shot call's batches (the whole corpus's length order, cut into
``batch_size`` batches; on the plain path, consecutive chunks of ``chunk`` texts) and a shard is
a run of whole batches of it. Shards encoded separately, in any process and order, and placed
back by row give exactly (bit for bit) what :func:`encode_texts` gives in one call.
"""

from __future__ import annotations

import logging

import numpy as np
import scipy.sparse as sp

log = logging.getLogger(__name__)

__all__ = ["EncodePlan", "encode_texts", "fast_path_available", "torch_sparse_to_csr"]

# Logits of one vocabulary chunk are [tokens, chunk]: about this many elements (4 MiB float32) per
# torch thread keeps each core's share near its cache (fastest on 2-core AVX-512: 0.5-1M per
# core single-threaded); more threads get a larger chunk, i.e. fewer parallel regions, which
# matters when the cores are shared with other processes.
_CHUNK_ELEMENTS = 1 << 20
_PROBE_TEXTS = [
    "a",
    "The quick brown fox jumps over the lazy dog, twice: the quick brown fox jumps over the lazy dog.",
    "retrieval of sparse lexical representations",
]
_PROBE_TOL = 1e-4


def torch_sparse_to_csr(tensor, n_cols: int) -> sp.csr_matrix:
    """A torch sparse COO (or dense) [rows, vocab] tensor as a float32 scipy CSR without a dense copy."""
    if tensor.is_sparse:
        t = tensor.coalesce().cpu()
        rows, cols = t.indices().numpy()
        vals = t.values().float().numpy()
        keep = vals != 0
        m = sp.csr_matrix((vals[keep], (rows[keep], cols[keep])), shape=(t.shape[0], n_cols), dtype=np.float32)
    else:
        m = sp.csr_matrix(tensor.detach().float().cpu().numpy())
    m.sum_duplicates()
    m.sort_indices()
    return m


def encode_texts(model, texts: list[str], kind: str, batch_size: int = 32, chunk: int = 4096) -> sp.csr_matrix:
    """Encode ``texts`` as queries (``kind='query'``) or documents to a float32 CSR (rows in input order).

    Equals ``model.encode_query`` / ``model.encode_document`` (same non-zero set, weights within
    1e-4, in practice bit-identical on CPU). ``chunk`` bounds how many texts the plain path hands
    to sentence-transformers at once; the fast path sorts all texts by length at once, as
    sentence-transformers does within one call.
    """
    return EncodePlan(model, texts, kind, batch_size, chunk).encode_all()


class EncodePlan:
    """How :func:`encode_texts` encodes ``texts``: the fast or the plain path (checked once, with
    the probe), the order rows are encoded in, and the unit whose boundaries never split a batch.

    ``order`` lists every row once; :meth:`encode` of any run ``order[a:b]`` with ``a`` a multiple
    of ``unit`` gives those rows' vectors exactly as the one-shot call does (same batches).
    :meth:`shards` cuts ``order`` into such runs.
    """

    def __init__(self, model, texts, kind: str, batch_size: int = 32, chunk: int = 4096):
        if kind not in ("query", "document"):
            raise ValueError(f"encode_texts: kind must be 'query' or 'document', got {kind!r}")
        if batch_size <= 0:
            raise ValueError(f"encode_texts: batch_size must be positive, got {batch_size}")
        self.model, self.kind, self.batch_size, self.chunk = model, kind, batch_size, chunk
        self.texts = list(texts)
        self._fast = _FastSplade.build(model, kind, batch_size)
        n = len(self.texts)
        if self._fast is not None:
            self.path, self.unit, self.vocab = "fast", batch_size, self._fast.vocab
            # The order sentence-transformers uses (``SparseEncoder._inference``) over the whole
            # corpus, so the batches, and hence the backbone's inputs, are those of one call.
            self.order = np.argsort([-model._input_length(s) for s in self.texts]).astype(np.int64, copy=False)
        else:
            # sentence-transformers is called on consecutive chunks of ``chunk`` texts (each sorted
            # by length inside the call): a run of whole chunks reproduces them.
            self.path, self.unit, self.vocab = "plain", chunk, None
            self.order = np.arange(n, dtype=np.int64)

    def shard_rows(self, shard_size: int | None) -> int:
        """Rows per shard: ``shard_size`` rounded down to a multiple of :attr:`unit` (at least one
        unit); the whole corpus for ``None`` or 0."""
        n = len(self.texts)
        if not shard_size or shard_size <= 0:
            return max(1, n)
        return max(self.unit, int(shard_size) // self.unit * self.unit)

    def shards(self, shard_size: int | None) -> list[np.ndarray]:
        """``order`` cut into runs of :meth:`shard_rows` rows (the last one shorter)."""
        size = self.shard_rows(shard_size)
        return [self.order[lo : lo + size] for lo in range(0, len(self.texts), size)]

    def encode_all(self) -> sp.csr_matrix:
        """Every text, rows in input order: what :func:`encode_texts` returns."""
        part = self.encode(self.order)
        if self.path == "plain":  # the order is the input order
            return part
        indptr = np.zeros(len(self.texts) + 1, dtype=np.int64)
        indptr[1:][self.order] = np.diff(part.indptr)
        np.cumsum(indptr, out=indptr)
        indices = np.empty(part.nnz, dtype=np.int32)
        data = np.empty(part.nnz, dtype=np.float32)
        from .sparse import scatter_rows

        scatter_rows(indptr, indices, data, self.order, part)
        return sp.csr_matrix((data, indices, indptr), shape=part.shape)

    def encode(self, rows) -> sp.csr_matrix:
        """Float32 CSR whose row ``j`` is the vector of ``texts[rows[j]]`` (``rows``: a unit-aligned run of ``order``)."""
        rows = np.asarray(rows, dtype=np.int64)
        subset = [self.texts[i] for i in rows.tolist()]
        if self._fast is not None:
            return self._fast.encode(subset)
        return _encode_plain(self.model, subset, self.kind, self.batch_size, self.chunk)


def fast_path_available(model, kind: str = "document") -> bool:
    """Whether :func:`encode_texts` takes the fast path for ``model`` (runs the probe check)."""
    return _FastSplade.build(model, kind, 8) is not None


def _encode_plain(model, texts: list[str], kind: str, batch_size: int, chunk: int) -> sp.csr_matrix:
    """sentence-transformers' own encode, chunk by chunk, to CSR."""
    import torch

    encode = model.encode_query if kind == "query" else model.encode_document
    # The width comes from the encoded tensors: before its first forward pass a SparseEncoder
    # reports the transformer's hidden size, not the vocabulary size.
    parts = []
    with torch.inference_mode():
        for start in range(0, len(texts), chunk):
            emb = encode(texts[start : start + chunk], batch_size=batch_size, convert_to_tensor=True, show_progress_bar=False)
            parts.append(torch_sparse_to_csr(emb, emb.shape[1]))
    if not parts:
        return sp.csr_matrix((0, _vocab_size(model)), dtype=np.float32)
    return sp.vstack(parts, format="csr")


def _vocab_size(model) -> int:
    return int(model[0].auto_model.config.vocab_size)


class _FastSplade:
    """The fast path for one (model, kind); :meth:`build` returns None when it does not apply."""

    def __init__(self, model, kind, batch_size, transformer, decoder, prompt, max_active_dims):
        self.model = model
        self.kind = kind
        self.batch_size = batch_size
        self.transformer = transformer
        self.decoder = decoder
        self.prompt = prompt
        self.max_active_dims = max_active_dims
        self.weight = decoder.weight
        bias = getattr(decoder, "bias", None)
        self.bias = bias if bias is not None and bias.ndim == 1 else None
        self.vocab = int(self.weight.shape[0])

    # -- recognition -------------------------------------------------------------------------
    @classmethod
    def build(cls, model, kind: str, batch_size: int):
        reason = cls._unsupported(model)
        if reason is not None:
            log.info("encode_texts: plain sentence-transformers path (%s)", reason)
            return None
        transformer = model[0]
        decoder = transformer.auto_model.get_output_embeddings()
        try:
            prompt = model._resolve_prompt(None, cls._prompt_name(model, kind))
        except Exception as exc:  # noqa: BLE001 - any failure means: let sentence-transformers do it
            log.warning("encode_texts: plain path (cannot resolve the %s prompt: %s)", kind, exc)
            return None
        plan = cls(model, kind, batch_size, transformer, decoder, prompt, model.max_active_dims)
        problem = plan._probe()
        if problem is not None:
            log.warning("encode_texts: plain sentence-transformers path for %s (%s)", type(transformer.auto_model).__name__, problem)
            return None
        return plan

    @staticmethod
    def _unsupported(model) -> str | None:
        try:
            from sentence_transformers import SparseEncoder
            from sentence_transformers.base.modules import Transformer
            from sentence_transformers.sparse_encoder.modules import SpladePooling
        except ImportError as exc:  # pragma: no cover - pinned dependency
            return f"sentence-transformers layout not recognised: {exc}"
        if not isinstance(model, SparseEncoder):
            return f"not a SparseEncoder: {type(model).__name__}"
        modules = list(model._modules.values())
        if len(modules) != 2:
            return f"{len(modules)} modules, expected Transformer + SpladePooling"
        transformer, pooling = modules
        if not isinstance(transformer, Transformer) or getattr(transformer, "transformer_task", None) != "fill-mask":
            return f"first module {type(transformer).__name__} is not a fill-mask Transformer"
        if getattr(transformer, "query_expansion", None) is not None:
            return "query expansion"
        if not isinstance(pooling, SpladePooling):
            return f"second module {type(pooling).__name__} is not SpladePooling"
        if pooling.pooling_strategy != "max" or pooling.activation_function != "relu":
            return f"SpladePooling({pooling.pooling_strategy!r}, {pooling.activation_function!r})"
        auto_model = getattr(transformer, "auto_model", None)
        decoder = auto_model.get_output_embeddings() if hasattr(auto_model, "get_output_embeddings") else None
        weight = getattr(decoder, "weight", None)
        if decoder is None or weight is None or weight.ndim != 2:
            return "no linear output embeddings"
        try:
            if model._can_flatten_inputs():
                return "flattened (unpadded) inputs"
        except Exception:  # noqa: BLE001
            pass
        return None

    @staticmethod
    def _prompt_name(model, kind: str) -> str | None:
        prompts = getattr(model, "prompts", {}) or {}
        if kind == "query":
            return "query" if "query" in prompts else None
        return next((p for p in ("document", "passage", "corpus") if p in prompts), None)

    # -- the computation ---------------------------------------------------------------------
    def _features(self, batch: list[str]):
        from sentence_transformers.util import batch_to_device

        features = self.model.preprocess(batch, prompt=self.prompt, task=self.kind)
        return batch_to_device(features, self.model.device)

    def _decoder_input(self, features):
        """Run the transformer with the decoder replaced by a capture; return its input."""
        captured = []
        decoder = self.decoder

        def capture(x, *args, **kwargs):
            captured.append(x)
            return x[..., :0]  # no vocabulary-sized logits

        had_own = "forward" in decoder.__dict__
        saved = decoder.__dict__.get("forward")
        decoder.forward = capture
        try:
            self.transformer(features)
        finally:
            if had_own:
                decoder.forward = saved
            else:
                del decoder.forward
        if len(captured) != 1:
            raise _Unsupported(f"the MLM decoder was called {len(captured)} times in one forward pass")
        return captured[0]

    segmented: bool = False  # tests switch layouts; see _pool

    def _pool(self, hidden, attention_mask):
        """max over real tokens of hidden @ W.T + b, then log1p(relu(.)): [batch, vocab].

        Default layout: every padding position gets a copy of a real token of its own sequence
        (one gather), so the padded ``[batch, tokens, chunk]`` logits need no mask and each
        vocabulary chunk costs two large ops (``F.linear``, ``amax``): few parallel regions, which
        keeps multi-threaded CPU runs fast when the cores are shared. ``segmented``: only the real
        tokens go through the decoder and each sequence's max is taken over its rows (no padding
        FLOPs, but one small op per sequence and chunk). Both give sentence-transformers' numbers:
        the same ``F.linear`` per token, a duplicated token cannot change a max, and the max
        commutes with the monotone ``log1p(relu(.))`` (padding is 0 there, which relu makes
        irrelevant).
        """
        import torch
        import torch.nn.functional as F

        b, t, h = hidden.shape
        keep = attention_mask != 0
        lengths = keep.sum(dim=1)
        empty = lengths == 0  # no real token at all: nothing is active
        out = torch.empty((b, self.vocab), dtype=hidden.dtype, device=hidden.device)
        if self.segmented:
            tokens = hidden[keep]  # [n_real, hidden], row-major: each sequence's tokens contiguous
            bounds = [0]
            for n in lengths.tolist():
                bounds.append(bounds[-1] + n)
            rows = max(1, tokens.shape[0])
        else:
            positions = torch.arange(t, device=hidden.device).expand(b, t)
            first = torch.where(keep, positions, t).amin(dim=1, keepdim=True).clamp(max=t - 1)
            source = torch.where(keep, positions, first)
            if not bool(keep.all()):
                hidden = torch.gather(hidden, 1, source.unsqueeze(-1).expand(b, t, h))
            rows = b * t
        per_chunk = _CHUNK_ELEMENTS * max(1, torch.get_num_threads()) if hidden.device.type == "cpu" else 1 << 26
        step = max(128, min(self.vocab, (per_chunk // rows) // 64 * 64))
        for lo in range(0, self.vocab, step):
            hi = min(self.vocab, lo + step)
            bias = self.bias[lo:hi] if self.bias is not None else None
            if self.segmented:
                logits = F.linear(tokens, self.weight[lo:hi], bias)
                for i in range(b):
                    if bounds[i + 1] > bounds[i]:
                        torch.amax(logits[bounds[i] : bounds[i + 1]], dim=0, out=out[i, lo:hi])
            else:
                logits = F.linear(hidden, self.weight[lo:hi], bias)  # [b, t, chunk]
                out[:, lo:hi] = logits.transpose(1, 2).amax(dim=-1)
        if bool(empty.any()):
            out[empty] = 0
        out.relu_().log1p_()
        if self.max_active_dims is not None:
            from sentence_transformers.util import select_max_active_dims

            out = select_max_active_dims(out, max_active_dims=self.max_active_dims)
        return out

    def _encode_batch(self, batch: list[str]):
        features = self._features(batch)
        hidden = self._decoder_input(features)
        mask = features["attention_mask"]
        if hidden.ndim != 3 or tuple(hidden.shape[:2]) != tuple(mask.shape):
            raise _Unsupported(f"decoder input shape {tuple(hidden.shape)} does not match the attention mask {tuple(mask.shape)}")
        return self._pool(hidden, mask)

    def encode(self, texts: list[str]) -> sp.csr_matrix:
        """Encode ``texts`` in this order, in consecutive batches of ``batch_size`` (no sorting:
        :class:`EncodePlan` gives them in the length order); rows in the given order."""
        import torch

        n = len(texts)
        if n == 0:
            return sp.csr_matrix((0, self.vocab), dtype=np.float32)
        self.model.eval()
        counts = np.zeros(n, dtype=np.int64)
        cols = []
        with torch.inference_mode():
            for start in range(0, n, self.batch_size):
                pooled = self._encode_batch(texts[start : start + self.batch_size])
                dense = pooled.float().cpu().numpy()
                flat = np.flatnonzero(dense)
                r, c = np.divmod(flat, self.vocab)
                counts[start : start + dense.shape[0]] = np.bincount(r, minlength=dense.shape[0])
                cols.append((c.astype(np.int32), dense.ravel()[flat]))
        # Within a batch the non-zeros are row-major and the batches are consecutive rows.
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        indices = np.concatenate([c for c, _ in cols]) if cols else np.zeros(0, np.int32)
        data = np.concatenate([v for _, v in cols]) if cols else np.zeros(0, np.float32)
        return sp.csr_matrix((data, indices, indptr), shape=(n, self.vocab))

    def _probe(self) -> str | None:
        """Check on a few texts that the captured decoder input gives sentence-transformers' vectors."""
        import torch

        self.model.eval()
        try:
            with torch.inference_mode():
                features = self._features(list(_PROBE_TEXTS))
                seen = {}

                def hook(module, args, output):
                    seen["input"], seen["output"] = args[0], output

                handle = self.decoder.register_forward_hook(hook)
                try:
                    reference = self.model(dict(features), task=self.kind)
                finally:
                    handle.remove()
                if "input" not in seen:
                    return "the MLM decoder is not called in the forward pass"
                logits = reference.get("token_embeddings")
                if logits is None or logits.shape != seen["output"].shape or not torch.equal(logits, seen["output"]):
                    return "the model's logits are not the decoder's output"
                import torch.nn.functional as F

                if not torch.allclose(F.linear(seen["input"], self.weight, self.bias), seen["output"], rtol=1e-5, atol=1e-5):
                    return "the decoder is not a linear map of its input"
                want = reference["sentence_embedding"]
                if self.max_active_dims is not None:
                    from sentence_transformers.util import select_max_active_dims

                    want = select_max_active_dims(want, max_active_dims=self.max_active_dims)
                got = self._encode_batch(list(_PROBE_TEXTS))
        except _Unsupported as exc:
            return str(exc)
        except Exception as exc:  # noqa: BLE001 - anything unexpected: the plain path is always right
            return f"probe failed: {type(exc).__name__}: {exc}"
        want = want.to_dense() if want.is_sparse else want
        if got.shape != want.shape or not torch.allclose(got.float(), want.float(), rtol=0, atol=_PROBE_TOL):
            return "probe vectors differ from sentence-transformers'"
        return None


class _Unsupported(Exception):
    """The fast path cannot reproduce this model's forward pass."""
