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


def make_beir(folder: Path, corpus=None, queries=None, qrels=None, split="test") -> Path:
    """Write a small BEIR folder; each argument is a list of lines (str or bytes)."""
    if corpus is None:
        corpus = [
            {"_id": "d1", "title": "Alpha", "text": "first document about cats"},
            {"_id": "d2", "title": "", "text": "second document about dogs"},
            {"_id": "d3", "text": "third document about birds"},
        ]
    if queries is None:
        queries = [{"_id": "q1", "text": "cats"}, {"_id": "q2", "text": "dogs"}]
    if qrels is None:
        qrels = ["query-id\tcorpus-id\tscore", "q1\td1\t2", "q1\td3\t0", "q2\td2\t1"]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "qrels").mkdir(exist_ok=True)

    def dump(path, lines):
        with open(path, "wb") as fh:
            for line in lines:
                if isinstance(line, dict):
                    line = json.dumps(line)
                if isinstance(line, str):
                    line = line.encode("utf-8")
                fh.write(line + b"\n")

    dump(folder / "corpus.jsonl", corpus)
    dump(folder / "queries.jsonl", queries)
    dump(folder / "qrels" / f"{split}.tsv", qrels)
    return folder
