"""Writing BEIR folders, with a corpus store that keeps one hard-linked copy of each distinct corpus."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Iterator

from lsrbench.atomic import atomic_dir
from lsrbench.data.beir import Dataset
from lsrbench.hashing import sha256_chunks

__all__ = ["write_beir_folder", "corpus_sha256", "prune_corpus_store"]


def _corpus_lines(corpus: dict[str, str]) -> Iterator[bytes]:
    for doc_id, text in corpus.items():
        yield (json.dumps({"_id": doc_id, "title": "", "text": text}, ensure_ascii=False) + "\n").encode("utf-8")


def corpus_sha256(corpus: dict[str, str]) -> str:
    """SHA-256 of the ``corpus.jsonl`` that :func:`write_beir_folder` writes for ``corpus``."""
    return sha256_chunks(_corpus_lines(corpus))


def _write_corpus(corpus: dict[str, str], dest: Path, store: Path | None) -> None:
    """Write ``corpus.jsonl`` to ``dest``, with a ``store`` as a hard link to its one copy (hashed first;
    unlinked copies removed; a plain file across file systems)."""
    if store is None:
        with open(dest, "wb") as fh:
            fh.writelines(_corpus_lines(corpus))
        return
    store.mkdir(parents=True, exist_ok=True)
    prune_corpus_store(store)
    stored = store / f"{corpus_sha256(corpus)}.jsonl"
    try:
        os.link(stored, dest)
        return
    except OSError:
        pass  # not stored yet (or removed meanwhile), or no hard links here: write it
    with open(dest, "wb") as fh:
        fh.writelines(_corpus_lines(corpus))
    with contextlib.suppress(OSError):  # FileExistsError: a concurrent job stored it first
        os.link(dest, stored)


def prune_corpus_store(store: str | os.PathLike) -> list[Path]:
    """Remove the stored corpus files no dataset folder links to any more (link count 1)."""
    removed = []
    for old in Path(store).glob("*.jsonl"):
        with contextlib.suppress(OSError):
            if old.stat().st_nlink == 1:
                old.unlink()
                removed.append(old)
    return removed


def write_beir_folder(dataset: Dataset, out_dir: str | os.PathLike, split: str = "test", *,
                      corpus_store: str | os.PathLike | None = None) -> Path:
    """Write ``dataset`` as a BEIR folder atomically and byte-for-byte deterministically; ``corpus_store``
    shares corpora by hard link."""
    out_dir = Path(out_dir)
    for query_id, judged in dataset.qrels.items():
        for doc_id in judged:
            for ident in (query_id, doc_id):
                if any(c in ident for c in "\t\r\n"):
                    raise ValueError(f"id {ident!r} contains a tab or newline; cannot be written to a TSV")
    with atomic_dir(out_dir) as tmp:
        _write_corpus(dataset.corpus, tmp / "corpus.jsonl", Path(corpus_store) if corpus_store else None)
        with open(tmp / "queries.jsonl", "w", encoding="utf-8", newline="\n") as fh:
            for query_id, text in dataset.queries.items():
                fh.write(json.dumps({"_id": query_id, "text": text}, ensure_ascii=False) + "\n")
        (tmp / "qrels").mkdir()
        with open(tmp / "qrels" / f"{split}.tsv", "w", encoding="utf-8", newline="\n") as fh:
            fh.write("query-id\tcorpus-id\tscore\n")
            for query_id in sorted(dataset.qrels):
                for doc_id in sorted(dataset.qrels[query_id]):
                    fh.write(f"{query_id}\t{doc_id}\t{int(dataset.qrels[query_id][doc_id])}\n")
    return out_dir
