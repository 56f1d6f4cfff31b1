"""The probe's report: ``results/probe.md`` and ``results/probe.json`` from the probe's results
(:func:`lsrbench.model.probe.probe_backbone`), what the paper's rescale ``W_head <- W_head / k`` ("Rescaling
MLM-Head for Neural Sparse Retrieval", arXiv 2606.18811) does to each backbone at step 0, with a recommended k
per backbone, and after training the trained outcomes beside the probe's numbers and how well the probe ranked
them."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from lsrbench.model.probe_names import DEFAULT_PROBE_STATISTIC
from lsrbench.names import k_order, k_value, split_run_name
from lsrbench.report.render import MISSING, markdown_table
from lsrbench.report.results import label_notes, run_label, run_table
from lsrbench.report.stats import spearman_exact

__all__ = ["PROBE_COLUMNS", "probe_frame", "reference_value", "recommend_k", "probe_outcomes", "probe_markdown",
           "probe_record", "start_loss", "start_loss_markdown", "probe_summary", "MIN_CORRELATION_RUNS"]

# What probe.md shows, in order: (result key, column header).
PROBE_COLUMNS = (
    ("score_scale", "score scale"), ("positive_score", "pos score"), ("negative_score", "neg score"),
    ("score_gap", "gap"), ("ranking_loss", "ranking loss"), ("flops_loss", "FLOPS loss"),
    ("flops_to_ranking_loss", "FLOPS / ranking"), ("ranking_grad_norm", "‖∇W ranking‖"),
    ("flops_grad_norm", "‖∇W FLOPS‖"), ("flops_to_ranking_grad", "∇ FLOPS / ranking"),
    ("query_active_terms", "q active"), ("document_active_terms", "d active"),
    ("document_active_share", "d share of V"), ("document_mean_weight", "d mean w"),
    ("document_max_weight", "d max w"), ("max_logit", "max logit"), ("frobenius_norm", "‖W‖_F"),
)
# Runs the rank correlation between the probe's prediction and the trained outcome needs for a p-value.
MIN_CORRELATION_RUNS = 5
REFERENCE_MARK = "★"


def _value(result: dict, key: str):
    value = result.get(key, result.get("head", {}).get(key))
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _k_text(result: dict) -> str:
    return result["k"] if k_value(result["k"]) is not None else f"{result['k']} ({result['k_value']:.3g})"


def _order(results: list[dict], backbones: dict) -> list[dict]:
    names = list(backbones)

    def key(r):
        base, mode = split_run_name(r["backbone"])
        return (names.index(base) if base in names else len(names), mode != "shared", r["backbone"], k_order(r["k"]))

    return sorted(results, key=key)


def probe_frame(results: list[dict], backbones: dict, reference: str | None) -> pd.DataFrame:
    """One row per probed run (backbone, mode, k), one column per :data:`PROBE_COLUMNS` statistic;
    the reference backbone's runs marked :data:`REFERENCE_MARK`."""
    rows = []
    for r in _order(results, backbones):
        mark = f" {REFERENCE_MARK}" if r["backbone"] == reference else ""
        row = {"Backbone": run_label(r["backbone"], backbones) + mark, "k": _k_text(r)}
        row |= {header: _value(r, key) for key, header in PROBE_COLUMNS}
        rows.append(row)
    return pd.DataFrame(rows, columns=["Backbone", "k", *(h for _, h in PROBE_COLUMNS)])


def reference_value(results: list[dict], reference: str, statistic: str) -> float | None:
    """The reference backbone's ``statistic`` at k = 1 (its shared-mode run as loaded)."""
    row = next((r for r in results if r["backbone"] == reference and r.get("k_value") == 1.0), None)
    return _value(row, statistic) if row else None


def _points(results: list[dict], run: str, statistic: str) -> list[tuple[float, float]]:
    pts = {}
    for r in results:
        if r["backbone"] == run and _value(r, statistic) is not None:
            pts.setdefault(float(r["k_value"]), _value(r, statistic))
    return sorted(pts.items())


def _crossing(points: list[tuple[float, float]], target: float) -> tuple[float | None, list[float] | None]:
    """The smallest k where the piecewise log-log line through ``points`` meets ``target`` (linear in the statistic
    where a value is not positive), with the probed k bracketing it."""
    for (k0, v0), (k1, v1) in zip(points, points[1:]):
        if (v0 - target) * (v1 - target) > 0:
            continue
        logs = min(v0, v1, target) > 0
        f = (lambda v: math.log(v)) if logs else (lambda v: v)
        span = f(v1) - f(v0)
        t = 0.0 if span == 0 else (f(target) - f(v0)) / span
        return math.exp(math.log(k0) + t * (math.log(k1) - math.log(k0))), [k0, k1]
    hit = next((k for k, v in points if v == target), None)
    return hit, ([hit, hit] if hit is not None else None)


def recommend_k(results: list[dict], reference: str, statistic: str = DEFAULT_PROBE_STATISTIC) -> dict[str, dict]:
    """Per probed run (backbone, mode): the k at which its ``statistic`` matches the reference backbone's at k = 1
    (:func:`_crossing`), or None with the reason (not bracketed by the probed k, no reference value)."""
    target = reference_value(results, reference, statistic)
    out = {}
    for run in dict.fromkeys(r["backbone"] for r in results):
        pts = _points(results, run, statistic)
        rec = {"statistic": statistic, "target": target, "k": None, "bracket": None,
               "probed_k": [k for k, _ in pts], "note": ""}
        if reference is None:
            rec["note"] = "no reference backbone (auto_k.reference)"
        elif target is None:
            rec["note"] = f"no {statistic} of the reference {reference} at k = 1"
        elif not pts:
            rec["note"] = f"no {statistic} probed"
        else:
            rec["k"], rec["bracket"] = _crossing(pts, target)
            if rec["k"] is None:
                side = "above" if pts[0][1] > target else "below"
                probed = f"the only probed k ({pts[0][0]:g})" if len(pts) == 1 else \
                    f"every probed k ({pts[0][0]:g} to {pts[-1][0]:g})"
                rec["note"] = f"{statistic} {side} the reference's at {probed}: probe {'larger' if side == 'above' else 'smaller'} k"
        out[run] = rec
    return out


def _distance(value: float | None, target: float | None) -> float | None:
    if value is None or target is None or value <= 0 or target <= 0:
        return None
    return abs(math.log(value / target))


def probe_outcomes(results: list[dict], metrics: pd.DataFrame, report_cfg: dict, backbones: dict, reference: str,
                   statistic: str = DEFAULT_PROBE_STATISTIC, resamples: int = 10000, seed: int = 0) -> dict:
    """After training: per probed run its trained result (the table's first column and whether it
    collapsed) beside the probe's prediction, minus the distance :func:`_distance` of its
    ``statistic`` from the reference's at k = 1 (closer predicts better), and Spearman's rho
    between prediction and outcome over all runs with both, with its exact permutation p-value
    when there are at least :data:`MIN_CORRELATION_RUNS` runs (:func:`lsrbench.report.stats.spearman_exact`)."""
    column = report_cfg["columns"][0]["name"]
    table = run_table(metrics, report_cfg, backbones)
    trained = {(r["backbone"], r["k"]): r for r in table.to_dict("records")} if len(table) else {}
    target = reference_value(results, reference, statistic)
    rows = []
    for r in _order(results, backbones):
        done = trained.get((r["backbone"], r["k"]))
        distance = _distance(_value(r, statistic), target)
        outcome = done.get(column) if done else None
        rows.append({"backbone": r["backbone"], "k": r["k"], statistic: _value(r, statistic),
                     "prediction": (-distance if distance else 0.0) if distance is not None else None,
                     "outcome": None if outcome is None or pd.isna(outcome) else float(outcome),
                     "collapsed": bool(done["collapsed"]) if done else None})
    pairs = [(row["prediction"], row["outcome"]) for row in rows if row["prediction"] is not None and row["outcome"] is not None]
    out = {"measure": column, "statistic": statistic, "target": target, "runs": rows, "n": len(pairs),
           "rho": None, "p_value": None, "method": None}
    if len(pairs) >= 3:
        rho, p, method = spearman_exact([a for a, _ in pairs], [b for _, b in pairs], resamples, seed)
        out["rho"] = None if math.isnan(rho) else rho
        if len(pairs) >= MIN_CORRELATION_RUNS and not math.isnan(p):
            out["p_value"], out["method"] = p, method
    return out


def _fmt(value, spec: str = ".4g") -> str:
    return MISSING if value is None or (isinstance(value, float) and math.isnan(value)) else format(value, spec)


def _recommendation_table(recs: dict, backbones: dict, reference: str) -> str:
    rows = [{"Backbone": run_label(run, backbones) + (f" {REFERENCE_MARK}" if run == reference else ""),
             "probed k": ", ".join(f"{k:g}" for k in rec["probed_k"]) or MISSING,
             "recommended k (probe)": _fmt(rec["k"], ".3g"),
             "between": " – ".join(f"{k:g}" for k in rec["bracket"]) if rec["bracket"] else MISSING,
             "note": rec["note"] or ""} for run, rec in recs.items()]
    return markdown_table(pd.DataFrame(rows))


def _outcome_section(outcomes: dict, backbones: dict) -> str:
    stat = outcomes["statistic"]
    frame = pd.DataFrame([{"Backbone": run_label(r["backbone"], backbones), "k": r["k"], stat: r[stat],
                           "prediction": r["prediction"], outcomes["measure"]: r["outcome"],
                           "collapsed": MISSING if r["collapsed"] is None else ("yes" if r["collapsed"] else "no")}
                          for r in outcomes["runs"]])
    if outcomes["rho"] is None:
        verdict = f"Spearman's rho: not measured ({outcomes['n']} runs with both a probe and a trained result)."
    elif outcomes["p_value"] is None:
        verdict = (f"Spearman's rho = {outcomes['rho']:+.3f} over {outcomes['n']} runs; no p-value below "
                   f"{MIN_CORRELATION_RUNS} runs.")
    else:
        verdict = (f"Spearman's rho = {outcomes['rho']:+.3f} over {outcomes['n']} runs, permutation p = "
                   f"{outcomes['p_value']:.4g}, {outcomes['method']}.")
    return ("\n## The probe against training\n\n"
            f"prediction = −|ln({stat} / the reference's at k = 1)|: a run that starts closer to the reference's "
            f"scale is predicted to train better. Outcome: {outcomes['measure']} after training (collapsed runs "
            "keep their measured value). A positive rho means the probe ranks the trained runs correctly.\n\n"
            + markdown_table(frame, floatfmt=".4g") + "\n\n" + verdict + "\n")


def probe_markdown(results: list[dict], backbones: dict, reference: str, statistic: str = DEFAULT_PROBE_STATISTIC,
                   outcomes: dict | None = None) -> str:
    """``results/probe.md``: the probe table, the recommended k per run and, with ``outcomes``
    (:func:`probe_outcomes`), the trained results beside the probe and the rank correlation."""
    recs = recommend_k(results, reference, statistic)
    target = reference_value(results, reference, statistic)
    first = results[0] if results else {}
    head = ("# Probe: the rescale at step 0, before any training\n\n"
            f"Each run's checkpoint with its head divided by k (W_head <- W_head / k, as training does it), on "
            f"{first.get('triplets', MISSING)} training triplets in batches of {first.get('batch_size', MISSING)} at "
            f"lengths {first.get('query_max_length', MISSING)}/{first.get('document_max_length', MISSING)}, no "
            "optimiser step, dropout off. Scores: dot products of a query with the batch's 2B documents (score scale: "
            "their standard deviation per query). Losses: the training loss at step 0, the FLOPS terms at the recipe's "
            "full lambda. Gradients: norms w.r.t. the head weight (for a tied head, the shared matrix, embedding path "
            + (f"included). {REFERENCE_MARK}: the reference backbone ({reference}).\n\n" if reference else
               "included). No reference backbone (auto_k.reference): nothing is marked or recommended.\n\n"))
    table = markdown_table(probe_frame(results, backbones, reference), floatfmt=".4g")
    rec = ("\n## Recommended k (heuristic)\n\n"
           f"The k at which a run's {statistic} matches the reference's at k = 1 ({_fmt(target)}), interpolated in "
           "log k and log value between the probed k. Assumption: the recipe tuned for the reference backbone works "
           "for another one when training starts at the same scale (the scores set the in-batch softmax's "
           "temperature, the FLOPS term grows with the activations squared); it ignores everything else that "
           "differs between backbones. "
           + ("The trained outcomes below test it." if outcomes else
              "probe_outcomes.md tests it against the trained outcomes, once the grid is trained.")
           + "\n\n" + _recommendation_table(recs, backbones, reference) + "\n")
    notes = "".join(f"\n{note}\n" for note in label_notes(backbones))
    return (head + table + "\n" + rec + start_loss_markdown(results, backbones, reference)
            + (_outcome_section(outcomes, backbones) if outcomes else "") + notes)


def _k1_and_lowest(results: list[dict], run: str, key: str) -> tuple[dict | None, dict | None]:
    mine = [r for r in results if r["backbone"] == run and _value(r, key) is not None]
    at1 = next((r for r in mine if r["k_value"] == 1.0), None)
    others = [r for r in mine if r["k_value"] != 1.0]
    return at1, (min(others, key=lambda r: _value(r, key)) if others else None)


def start_loss_markdown(results: list[dict], backbones: dict, reference: str | None, key: str = "ranking_loss") -> str:
    """The paper's claim 3 at step 0 ("unrescaled large-norm models start with very high loss"),
    checkable without training: per probed run its loss at k = 1 against the reference's at k = 1
    and against its own lowest over the probed k (claims.md uses these starts where a run has no
    training log: :func:`start_loss`)."""
    ref = reference_value(results, reference, key) if reference else None
    rows = []
    for run in dict.fromkeys(r["backbone"] for r in _order(results, backbones)):
        at1, low = _k1_and_lowest(results, run, key)
        rows.append({"Backbone": run_label(run, backbones) + (f" {REFERENCE_MARK}" if run == reference else ""),
                     "‖W‖_F at k = 1": _value(at1, "frobenius_norm") if at1 else None,
                     "loss at k = 1": _value(at1, key) if at1 else None,
                     "reference's at k = 1": ref,
                     "lowest at another k": _value(low, key) if low else None, "at k": _k_text(low) if low else MISSING,
                     "k = 1 starts higher": MISSING if not (at1 and low) else
                     ("yes" if _value(at1, key) > _value(low, key) else "no")})
    batch = (results[0].get("batch_size") if results else None) or 0
    uniform = f" A uniform in-batch softmax over the 2B = {2 * batch} documents gives ln({2 * batch}) = " \
              f"{math.log(2 * batch):.3f}." if batch else ""
    return ("\n## Claim 3 at step 0: does the unrescaled head start with a high loss?\n\n"
            f"{key.replace('_', ' ')} at step 0 (the training loss before any optimiser step) of each run unrescaled "
            "(k = 1), the reference backbone's at k = 1, and the run's lowest over its other probed k. Measured "
            f"without training; claims.md takes a run's start from here where it has no training log.{uniform}\n\n"
            + markdown_table(pd.DataFrame(rows), floatfmt=".4g") + "\n")


def probe_summary(results: list[dict], backbones: dict, reference: str | None,
                  statistic: str = DEFAULT_PROBE_STATISTIC) -> str:
    """The few columns ``lsrbench probe`` prints: per run and k the crossed statistic, the losses at
    step 0 and the largest logit, then the recommended k per run."""
    keys = list(dict.fromkeys([statistic, "ranking_loss", "flops_loss", "max_logit"]))
    frame = probe_frame(results, backbones, reference)
    rows = [{"Backbone": row["Backbone"], "k": row["k"], **{key: _value(r, key) for key in keys}}
            for row, r in zip(frame.to_dict("records"), _order(results, backbones))]
    recs = recommend_k(results, reference, statistic)
    return (markdown_table(pd.DataFrame(rows), floatfmt=".4g") + "\n\nRecommended k (where the " + statistic
            + " crosses the reference's at k = 1; a heuristic, docs/probe.md):\n\n"
            + _recommendation_table(recs, backbones, reference) + "\n")


def probe_record(results: list[dict], reference: str, statistic: str = DEFAULT_PROBE_STATISTIC,
                 outcomes: dict | None = None) -> dict:
    """``results/probe.json``: every probe result as measured, the recommendations and the outcomes."""
    return {"reference": reference, "statistic": statistic, "runs": results,
            "recommendations": recommend_k(results, reference, statistic), "outcomes": outcomes}


def start_loss(run: str, k: str, train_logs: dict, probes: list[dict], key: str = "ranking_loss",
               window: int = 1) -> dict:
    """A run's loss at the start of training for the paper's claim 3 ("unrescaled large-norm models start with very
    high loss"): the mean of the first ``window`` finite logged values of ``key`` when the run's training log
    (``train_logs[(run, k)]``) has them, else the probe's value at step 0 (same loss, same recipe, no training
    needed), else None."""
    rows = [r[key] for r in train_logs.get((run, k)) or [] if r.get(key) is not None and math.isfinite(r[key])]
    if rows:
        return {"value": float(np.mean(rows[:window])), "source": "training log",
                "detail": f"mean of the first {min(window, len(rows))} logged steps"}
    probe = next((p for p in probes if p["backbone"] == run and p["k"] == k), None)
    if probe is not None and probe.get(key) is not None:
        return {"value": float(probe[key]), "source": "probe", "detail": "step 0 of the probe (no training log)"}
    return {"value": None, "source": None, "detail": "neither a training log nor a probe"}
