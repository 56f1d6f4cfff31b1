"""Effectiveness through ir_measures (MacAvaney et al. 2022), per query and averaged over judged queries; what
an empty result counts for follows the dataset's ``empty_results``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import ir_measures
from lsrbench.errors import InputError

__all__ = ["EMPTY_RESULTS", "evaluate_run", "fill_ranking", "parse_measures"]

# What a judged query with fewer than top_k results counts for, per the toolchain reproduced (docs/evaluation.md).
#   zero  scored as it stands, counted (MS MARCO's MRR script, trec_eval -c)
#   skip  left out of the mean when it retrieved nothing (naver/splade, BEIR's evaluate)
#   fill  completed with zero-score documents by id (sentence-transformers, BEIR's exact search, mteb)
EMPTY_RESULTS = ("zero", "skip", "fill")


def parse_measures(names: Sequence[str]) -> list[ir_measures.Measure]:
    """Parse measure names with ir_measures, each tried on a toy qrels so a bad parameter fails before any work;
    InputError on ``measures``."""
    measures: list[ir_measures.Measure] = []
    for name in names:
        try:
            m = ir_measures.parse_measure(name)
            ir_measures.evaluator([m], {"q": {"d": 1}})
        except Exception as exc:  # ir_measures raises NameError/ValueError/KeyError/AssertionError
            detail = " ".join(str(exc).split()) or type(exc).__name__
            raise InputError(None, "measures", f"unknown or unsupported measure {name!r} ({detail})") from None
        if m not in measures:
            measures.append(m)
    return measures


def evaluate_run(
    run: Mapping[str, Mapping[str, float]],
    qrels: Mapping[str, Mapping[str, int]],
    measures: Sequence[str],
    *,
    empty_results: str = "zero",
    corpus_ids: Sequence[str] | None = None,
    depth: int | None = None,
    skip_identical_ids: bool = False,
) -> tuple[dict[str, float], list[tuple[str, str, float]]]:
    """Evaluate ``run`` against ``qrels`` with ir_measures: ``(aggregate, per_query)``. A judged query that
    retrieved nothing follows ``empty_results`` (``zero``, ``skip``, ``fill``); ``fill`` hands strictly
    decreasing scores, since providers re-sort by score and break ties differently."""
    parsed = parse_measures(measures)
    if not qrels:
        raise ValueError("evaluate_run: qrels is empty")
    if empty_results not in EMPTY_RESULTS:
        raise ValueError(f"evaluate_run: empty_results must be one of {', '.join(EMPTY_RESULTS)}, got {empty_results!r}")
    qrels = {str(q): {str(d): int(r) for d, r in docs.items()} for q, docs in qrels.items()}
    judged_run = {str(q): {str(d): float(s) for d, s in docs.items()} for q, docs in run.items() if str(q) in qrels}
    if empty_results == "fill":
        if corpus_ids is None or depth is None:
            raise ValueError("evaluate_run: empty_results 'fill' needs corpus_ids and depth")
        judged_run = fill_ranking(judged_run, sorted(qrels), corpus_ids, depth, skip_identical_ids)
    scored = [q for q in sorted(qrels) if empty_results != "skip" or judged_run.get(q)]

    values: dict[tuple[str, ir_measures.Measure], float] = {}
    for metric in ir_measures.iter_calc(parsed, qrels, judged_run):
        if metric.query_id in qrels:
            values[(metric.query_id, metric.measure)] = float(metric.value)

    per_query: list[tuple[str, str, float]] = []
    aggregators = {m: m.aggregator() for m in parsed}
    for qid in scored:
        for m in parsed:
            v = values.get((qid, m), float(m.DEFAULT))
            aggregators[m].add(v)
            per_query.append((qid, str(m), v))
    aggregate = {str(m): float(aggregators[m].result()) if scored else 0.0 for m in parsed}
    return aggregate, per_query


def fill_ranking(run: Mapping[str, Mapping[str, float]], query_ids: Sequence[str], corpus_ids: Sequence[str],
                 depth: int, skip_identical_ids: bool = False) -> dict[str, dict[str, float]]:
    """Each query's ranking as sentence-transformers' evaluator makes it (retrieved by (-score, id), then the
    rest by id, to ``depth``), with strictly decreasing scores."""
    by_id: list[str] | None = None
    filled: dict[str, dict[str, float]] = {}
    for qid in query_ids:
        hits = [d for d, _ in sorted(run.get(qid, {}).items(), key=lambda kv: (-kv[1], kv[0]))][:depth]
        if len(hits) < depth:
            by_id = sorted(map(str, corpus_ids)) if by_id is None else by_id
            retrieved = set(hits)
            for doc_id in by_id:
                if doc_id not in retrieved and not (skip_identical_ids and doc_id == qid):
                    hits.append(doc_id)
                    if len(hits) == depth:
                        break
        filled[qid] = {doc_id: float(depth - rank) for rank, doc_id in enumerate(hits)}
    return filled
