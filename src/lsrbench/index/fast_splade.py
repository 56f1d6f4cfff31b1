"""The fast SPLADE encoder: the backbone run to the MLM decoder's input, the decoder applied in vocabulary
chunks and the max taken before ``log1p(relu(.))``, never the full logits. Written here because
sentence-transformers' pooling materialises the vocabulary-sized logits, most of CPU encoding; the vectors are
the same (probed before use)."""

from __future__ import annotations

import logging

import numpy as np
import scipy.sparse as sp

from lsrbench.model.families import family_of
from lsrbench.model.fused_pooling import PROBE_TEXTS, FusedUnsupported, probe, splade_layout_problem

log = logging.getLogger(__name__)

__all__ = ["FastSplade"]

# Logit elements per torch thread per vocabulary chunk: about a core's cache; more threads, fewer
# parallel regions (which matters when cores are shared).
_CHUNK_ELEMENTS = 1 << 20
_PROBE_TOL = 1e-4


class FastSplade:
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
        self.bias = family_of(transformer.auto_model).decoder_bias(decoder)
        self.vocab = int(self.weight.shape[0])

    @classmethod
    def build(cls, model, kind: str, batch_size: int):
        reason = splade_layout_problem(model)
        if reason is not None:
            log.info("encode_texts: plain sentence-transformers path (%s)", reason)
            return None
        transformer = model[0]
        decoder = family_of(transformer.auto_model).decoder(transformer.auto_model)
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
    def _prompt_name(model, kind: str) -> str | None:
        prompts = getattr(model, "prompts", {}) or {}
        if kind == "query":
            return "query" if "query" in prompts else None
        return next((p for p in ("document", "passage", "corpus") if p in prompts), None)

    def _tokenize(self, batch: list[str]):
        return self.model.preprocess(batch, prompt=self.prompt, task=self.kind)

    def _features(self, batch: list[str]):
        from sentence_transformers.util import batch_to_device

        return batch_to_device(self._tokenize(batch), self.model.device)

    def _decoder_input(self, features):
        captured = []
        decoder = self.decoder

        def capture(x, *args, **kwargs):
            captured.append(x)
            return x[..., :0]  # no vocabulary-sized logits

        with family_of(self.transformer.auto_model).capture(decoder, capture):
            self.transformer(features)
        if len(captured) != 1:
            raise FusedUnsupported(f"the MLM decoder was called {len(captured)} times in one forward pass")
        return captured[0]

    segmented: bool = False

    def _pool(self, hidden, attention_mask):
        """``max`` over real tokens of ``hidden @ W.T + b``, then ``log1p(relu(.))``: [batch, vocab]. Padding
        positions get a copy of a real token (a duplicate cannot change a max), so each chunk is two large ops;
        ``segmented`` sends only real tokens through the decoder."""
        import torch
        import torch.nn.functional as F

        b, t, h = hidden.shape
        keep = attention_mask != 0
        lengths = keep.sum(dim=1)
        empty = lengths == 0  # no real token at all: nothing is active
        out = torch.empty((b, self.vocab), dtype=hidden.dtype, device=hidden.device)
        if self.segmented:
            tokens = hidden[keep]
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
        return self._encode_features(self._features(batch))

    def _encode_features(self, features):
        hidden = self._decoder_input(features)
        mask = features["attention_mask"]
        if hidden.ndim != 3 or tuple(hidden.shape[:2]) != tuple(mask.shape):
            raise FusedUnsupported(f"decoder input shape {tuple(hidden.shape)} does not match the attention mask {tuple(mask.shape)}")
        return self._pool(hidden, mask)

    def encode(self, texts: list[str], progress=None) -> sp.csr_matrix:
        """Encode ``texts`` in this order in consecutive batches (no sorting); ``progress`` advances per
        batch."""
        import torch
        from sentence_transformers.util import batch_to_device

        n = len(texts)
        if n == 0:
            return sp.csr_matrix((0, self.vocab), dtype=np.float32)
        self.model.eval()
        counts = np.zeros(n, dtype=np.int64)
        cols = []
        starts = list(range(0, n, self.batch_size))
        with torch.inference_mode(), _Prefetch(self._tokenize, [texts[s : s + self.batch_size] for s in starts],
                                               self._prefetching()) as tokenized:
            for start, features in zip(starts, tokenized):
                pooled = self._encode_features(batch_to_device(features, self.model.device))
                rows, c, v = self._nonzeros(pooled)
                counts[start : start + pooled.shape[0]] = np.bincount(rows, minlength=pooled.shape[0])
                cols.append((c, v))
                if progress is not None:
                    progress.advance(pooled.shape[0])
        # Within a batch the non-zeros are row-major and the batches are consecutive rows.
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        indices = np.concatenate([c for c, _ in cols]) if cols else np.zeros(0, np.int32)
        data = np.concatenate([v for _, v in cols]) if cols else np.zeros(0, np.float32)
        return sp.csr_matrix((data, indices, indptr), shape=(n, self.vocab))

    # GPU only: tokenise the next batch in a thread and copy only the non-zeros to the host (same bytes either way).
    prefetch: bool | None = None
    nonzero_on_device: bool | None = None

    def _prefetching(self) -> bool:
        return self.prefetch if self.prefetch is not None else self.model.device.type != "cpu"

    def _nonzeros(self, pooled):
        import torch

        pooled = pooled.float()
        on_device = self.nonzero_on_device if self.nonzero_on_device is not None else pooled.device.type != "cpu"
        if on_device:
            where = torch.nonzero(pooled)  # lexicographic (row, column): np.flatnonzero's order
            values = pooled[where[:, 0], where[:, 1]]
            return (where[:, 0].cpu().numpy(), where[:, 1].to(torch.int32).cpu().numpy(), values.cpu().numpy())
        dense = pooled.cpu().numpy()
        flat = np.flatnonzero(dense)
        r, c = np.divmod(flat, self.vocab)
        return r, c.astype(np.int32), dense.ravel()[flat]

    def _probe(self) -> str | None:
        """The fused-pooling probe of this path on a few texts: the captured decoder input gives
        sentence-transformers' vectors."""
        import torch
        import torch.nn.functional as F

        texts = list(PROBE_TEXTS)

        def reference():
            seen = {}

            def hook(module, args, output):
                seen["input"], seen["output"] = args[0], output

            handle = self.decoder.register_forward_hook(hook)
            try:
                out = self.model(dict(self._features(texts)), task=self.kind)
            finally:
                handle.remove()
            if "input" not in seen:
                raise FusedUnsupported("the MLM decoder is not called in the forward pass")
            logits = out.get("token_embeddings")
            if logits is None or logits.shape != seen["output"].shape or not torch.equal(logits, seen["output"]):
                raise FusedUnsupported("the model's logits are not the decoder's output")
            if not torch.allclose(F.linear(seen["input"], self.weight, self.bias), seen["output"], rtol=1e-5, atol=1e-5):
                raise FusedUnsupported("the decoder is not a linear map of its input")
            want = out["sentence_embedding"]
            if self.max_active_dims is not None:
                from sentence_transformers.util import select_max_active_dims

                want = select_max_active_dims(want, max_active_dims=self.max_active_dims)
            return want

        self.model.eval()
        return probe(self.model, reference, lambda: self._encode_batch(texts), rtol=0, atol=_PROBE_TOL)


class _Prefetch:
    """Iterate ``fn(item)`` over ``items``, computing the next in a worker thread while the caller uses this one
    (when ``on``)."""

    def __init__(self, fn, items: list, on: bool):
        self.fn, self.items, self.on, self.pool = fn, items, on, None

    def __enter__(self):
        if self.on and len(self.items) > 1:
            from concurrent.futures import ThreadPoolExecutor

            self.pool = ThreadPoolExecutor(1, thread_name_prefix="lsrbench-tokenize")
        return self._iterate()

    def _iterate(self):
        if self.pool is None:
            for item in self.items:
                yield self.fn(item)
            return
        ahead = self.pool.submit(self.fn, self.items[0])
        for i in range(len(self.items)):
            current = ahead.result()
            if i + 1 < len(self.items):
                ahead = self.pool.submit(self.fn, self.items[i + 1])
            yield current

    def __exit__(self, *exc):
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
