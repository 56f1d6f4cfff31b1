"""Effectiveness measures through ir_measures (MacAvaney et al., "Streamlining Evaluation with
ir-measures", ECIR 2022): every metric lsrbench reports is computed by it, per query and averaged
over every judged query."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import ir_measures
from lsrbench.errors import InputError

__all__ = ["evaluate_run", "parse_measures"]


def parse_measures(names: Sequence[str]) -> list[ir_measures.Measure]:
    """Parse measure names with ir_measures; unknown or invalid ones raise ``InputError(None, "measures", ...)``.

    Parameters (cutoff, rel, ...) are only validated when an evaluator is built, so each measure
    is also tried on a one-query toy qrels here, to fail before any real work.
    """
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
) -> tuple[dict[str, float], list[tuple[str, str, float]]]:
    """Evaluate ``run`` against ``qrels`` with ir_measures.

    Returns ``(aggregate, per_query)``: ``aggregate`` maps each measure name (as ir_measures
    prints it, e.g. ``"nDCG@10"``) to its value; ``per_query`` lists ``(qid, measure, value)``
    sorted by qid then measure order. The population is exactly the queries in ``qrels``: a
    judged query that is absent from the run (or retrieved nothing) scores the measure's default
    (0), and run queries without judgments are ignored, so the mean is over all judged queries
    whatever the provider does with missing queries. Each measure is aggregated by its own
    aggregator (mean for all the usual ones).

    Note that the providers re-sort each query by score and ignore ranks, and break score ties
    differently (pytrec_eval: doc id descending; msmarco, used for RR@k: doc id ascending).
    """
    parsed = parse_measures(measures)
    if not qrels:
        raise ValueError("evaluate_run: qrels is empty")
    qrels = {str(q): {str(d): int(r) for d, r in docs.items()} for q, docs in qrels.items()}
    judged_run = {str(q): {str(d): float(s) for d, s in docs.items()} for q, docs in run.items() if str(q) in qrels}

    values: dict[tuple[str, ir_measures.Measure], float] = {}
    for metric in ir_measures.iter_calc(parsed, qrels, judged_run):
        if metric.query_id in qrels:
            values[(metric.query_id, metric.measure)] = float(metric.value)

    aggregate: dict[str, float] = {}
    per_query: list[tuple[str, str, float]] = []
    aggregators = {m: m.aggregator() for m in parsed}
    for qid in sorted(qrels):
        for m in parsed:
            v = values.get((qid, m), float(m.DEFAULT))
            aggregators[m].add(v)
            per_query.append((qid, str(m), v))
    for m in parsed:
        aggregate[str(m)] = float(aggregators[m].result())
    return aggregate, per_query
