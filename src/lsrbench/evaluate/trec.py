"""TREC run files (``qid Q0 docid rank score tag``), read by trec_eval, ir_measures and every IR toolkit."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence

from lsrbench.atomic import atomic_open
from lsrbench.errors import InputError

__all__ = ["write_trec_run", "read_trec_run"]


def _check_token(value: str, what: str) -> str:
    value = str(value)
    if not value or any(c.isspace() for c in value):
        raise ValueError(f"write_trec_run: {what} {value!r} is empty or contains whitespace")
    return value


def write_trec_run(path: str | os.PathLike, results: Mapping[str, Sequence[tuple[str, float]]], tag: str) -> None:
    """Write a TREC run atomically, each query stably sorted by score and ranked from 1, scores by ``repr``;
    ValueError for non-finite scores or whitespace in ids."""
    tag = _check_token(tag, "tag")
    with atomic_open(path, "w", encoding="utf-8", newline="\n") as fh:
        for qid, docs in results.items():
            qid = _check_token(qid, "query id")
            ranked = sorted(((str(d), float(s)) for d, s in docs), key=lambda ds: -ds[1])
            seen: set[str] = set()
            for rank, (docid, score) in enumerate(ranked, start=1):
                _check_token(docid, "document id")
                if not math.isfinite(score):
                    raise ValueError(f"write_trec_run: non-finite score for {qid}/{docid}")
                if docid in seen:
                    raise ValueError(f"write_trec_run: document {docid!r} twice for query {qid!r}")
                seen.add(docid)
                fh.write(f"{qid} Q0 {docid} {rank} {score!r} {tag}\n")


def read_trec_run(path: str | os.PathLike) -> dict[str, dict[str, float]]:
    """Read a TREC run into ``{qid: {docid: score}}``; a malformed line or repeated pair is ``InputError(path,
    "line N", ...)``."""
    path = str(path)
    if not os.path.exists(path):
        raise InputError(path, None, "file not found")
    run: dict[str, dict[str, float]] = {}
    try:
        with open(path, encoding="utf-8") as fh:
            for n, line in enumerate(fh, start=1):
                fields = line.split()
                if not fields:
                    continue
                where = f"line {n}"
                if len(fields) != 6:
                    raise InputError(path, where, f"expected 6 columns 'qid Q0 docid rank score tag', got {len(fields)}")
                qid, _, docid, rank, score_s, _ = fields
                try:
                    int(rank)
                except ValueError:
                    raise InputError(path, where, f"rank {rank!r} is not an integer") from None
                try:
                    score = float(score_s)
                except ValueError:
                    raise InputError(path, where, f"score {score_s!r} is not a number") from None
                if not math.isfinite(score):
                    raise InputError(path, where, f"score {score_s!r} is not finite")
                docs = run.setdefault(qid, {})
                if docid in docs:
                    raise InputError(path, where, f"document {docid!r} repeated for query {qid!r}")
                docs[docid] = score
    except UnicodeDecodeError as exc:
        raise InputError(path, None, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    return run
