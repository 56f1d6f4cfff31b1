"""Small BEIR-layout folders written by the tests."""

from __future__ import annotations

import json
from pathlib import Path


def write_beir(folder: Path, corpus: dict, queries: dict, qrels: list[tuple[str, str, int]], split="test") -> Path:
    """``corpus.jsonl``, ``queries.jsonl`` and ``qrels/<split>.tsv`` of the given ids and texts."""
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    with open(folder / "corpus.jsonl", "w") as fh:
        for i, t in corpus.items():
            fh.write(json.dumps({"_id": i, "title": "", "text": t}) + "\n")
    with open(folder / "queries.jsonl", "w") as fh:
        for i, t in queries.items():
            fh.write(json.dumps({"_id": i, "text": t}) + "\n")
    with open(folder / "qrels" / f"{split}.tsv", "w") as fh:
        fh.write("query-id\tcorpus-id\tscore\n")
        for q, d, s in qrels:
            fh.write(f"{q}\t{d}\t{s}\n")
    return folder
