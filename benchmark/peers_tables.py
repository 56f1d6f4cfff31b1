"""Markdown tables of results/realistic-fit*.json and results/peers-*.json (for benchmark/README.md).

    .venv/bin/python benchmark/peers_tables.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"


def _load(name):
    p = RESULTS / f"{name}.json"
    return json.loads(p.read_text()) if p.is_file() else None


def fit_table() -> str:
    fit, peers = _load("realistic-fit"), _load("realistic-fit-peers")
    cols = [("real Vaswani (11,429)", fit["stats"]["real"])]
    if "real_shuffled" in fit["stats"]:
        cols.append(("real, shuffled order", fit["stats"]["real_shuffled"]))
    cols += [("sampled 11,429", fit["stats"]["sampled_11429"]),
            ("sampled 11,429, real queries", fit["stats"]["sampled_11429_real_queries"])]
    if peers:
        cols += [(f"benchmark's {int(k.split('_')[1]):,}", v) for k, v in peers["stats"].items() if k.startswith("sampled_")]
    def g(d, path):
        for p in path.split("."):
            if d is None:
                return None
            d = d.get(p)
        return d
    rows = [("documents: non-zeros mean (p5 / p50 / p95)", lambda s: f"{s['doc_nnz_mean']:.1f} ({'/'.join(map(str, s['doc_nnz_p5_p50_p95']))})"),
            ("queries: non-zeros mean (p5 / p50 / p95)", lambda s: f"{s['query_nnz_mean']:.1f} ({'/'.join(map(str, s['query_nnz_p5_p50_p95']))})"),
            ("df / N of the terms ranked 1 / 10 / 100 / 1000 / 5000", lambda s: " / ".join(f"{v:.3g}" for v in s["df_over_n_at_rank"].values())),
            ("terms with df / N >= 1/16: count, share of postings", lambda s: f"{g(s, 'by_df_share.[1/16, 1).terms')}, {g(s, 'by_df_share.[1/16, 1).postings_share'):.3f}")]
    for b in ("[1/16, 1)", "[1/256, 1/16)", "[1/4096, 1/256)", "[0, 1/4096)"):
        rows.append((f"document weight mean (p50 / p99), df / N in {b}",
                     lambda s, b=b: (lambda x: f"{x['weight_mean']:.3f} ({x['weight_p50_p99'][0]:.2f} / {x['weight_p50_p99'][1]:.2f})")(s["by_df_share"][b])))
    rows += [("correlation of log df and weight (per posting)", lambda s: f"{s['corr_log_df_weight']:.3f}"),
             ("query terms with df / N >= 1/16 (their mean weight)", lambda s: f"{s['query_terms_by_df_share']['[1/16, 1)']:.2f} ({s['query_weight_by_df_share']['[1/16, 1)']:.2f})"),
             ("query terms with df / N in [1/256, 1/16) (mean weight)", lambda s: f"{s['query_terms_by_df_share']['[1/256, 1/16)']:.2f} ({s['query_weight_by_df_share']['[1/256, 1/16)']:.2f})"),
             ("postings touched per query / N", lambda s: f"{s['postings_touched_per_query_over_n']:.2f}"),
             ("k = 10: k-th score / best score", lambda s: f"{s['k10']['kth_over_best_mean']:.3f}"),
             ("k = 1000: k-th score / best score", lambda s: f"{s['k1000']['kth_over_best_mean']:.3f}"),
             ("k = 10: blocks of 32 (stored order) whose bound reaches the k-th score", lambda s: f"{s['k10']['blocks_to_score_share']:.3f}"),
             ("k = 1000: same", lambda s: f"{s['k1000']['blocks_to_score_share']:.3f}")]
    out = ["| statistic | " + " | ".join(c for c, _ in cols) + " |", "|---" * (len(cols) + 1) + "|"]
    for label, f in rows:
        vals = []
        for _, s in cols:
            try:
                vals.append(f(s))
            except (KeyError, TypeError):
                vals.append("–")
        out.append(f"| {label} | " + " | ".join(vals) + " |")
    return "\n".join(out)


def _timed(r, row) -> str:
    return "" if r["queries_timed"] == row["queries"] else f" [{r['queries_timed']} q]"


def peers_table(names=("peers-100k", "peers-300k", "peers-1m")) -> str:
    out = ["| collection | documents | k | system | ms/query CPU: median (min-max) | wall ms/query | time / lsrbench | overlap@k vs exact | identical | build s | index bytes / postings |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name in names:
        d = _load(name)
        if not d:
            continue
        for row in d["rows"]:
            for k, kr in row["k"].items():
                for sysname, r in kr["systems"].items():
                    built = row["systems"].get(sysname, {})
                    if sysname == "seismic":
                        built = {"build_s": r.get("build_s"), "index_bytes_over_postings": (r.get("index_bytes") or 0) / row["postings_bytes"]}
                    lo, hi = r["ms_per_query_min_max"]
                    out.append(f"| {row['collection']} | {row['documents']:,} | {k} | {sysname} | {r['ms_per_query']:.2f} ({lo:.2f}-{hi:.2f})"
                               f"{_timed(r, row)}"
                               f" | {r['wall_ms_per_query']:.2f} | {r.get('time_over_lsrbench', float('nan')):.2f}"
                               f" | {r.get(f'overlap_at_{k}_vs_exact', float('nan')):.4f} | {'yes' if r.get('identical_to_exact') else 'no'}"
                               f" | {built.get('build_s', float('nan')):.1f} | {built.get('index_bytes_over_postings', float('nan')):.2f} |")
    return "\n".join(out)


def memory_table(names=("peers-100k", "peers-1m")) -> str:
    out = ["| collection | documents | system | build peak MiB | build + search peak MiB | / postings bytes |", "|---|---|---|---|---|---|"]
    for name in names:
        d = _load(name)
        if not d:
            continue
        for row in d["rows"]:
            for sysname, m in row.get("memory", {}).items():
                if "error" in m:
                    continue
                out.append(f"| {row['collection']} | {row['documents']:,} | {sysname} | {m['peak_build_mib']:.0f} | {m['peak_build_and_search_mib']:.0f} | {m['peak_over_postings_bytes']:.2f} |")
    return "\n".join(out)


def bmp_table(names=("peers-100k", "peers-1m")) -> str:
    out = ["| collection | documents | k | doc scale (255 / max w) | queries with a quantized score > 65,535 | BMP vs exact top-k of its own integer scores | BMP overlap@k vs float64 exact |", "|---|---|---|---|---|---|---|"]
    for name in names:
        d = _load(name)
        if not d:
            continue
        for row in d["rows"]:
            for k, kr in row["k"].items():
                b = kr.get("bmp_integers")
                if b:
                    out.append(f"| {row['collection']} | {row['documents']:,} | {k} | {b['doc_scale']:.1f} | {b['queries_with_any_document_over_65535']} of {b['queries']} |"
                               f" {b['overlap_with_exact_topk_of_its_own_quantized_scores']:.4f} | {kr['systems']['bmp'][f'overlap_at_{k}_vs_exact']:.4f} |")
    return "\n".join(out)


def growth(names=("peers-100k", "peers-300k", "peers-1m"), collection="realistic", target=8_841_823) -> str:
    pts = {}
    for name in names:
        d = _load(name)
        if not d:
            continue
        for row in d["rows"]:
            if row["collection"] != collection:
                continue
            for k, kr in row["k"].items():
                for s, r in kr["systems"].items():
                    pts.setdefault((k, s), []).append((row["documents"], r["ms_per_query"]))
    out = ["| k | system | ms/query CPU at 100k / 300k / 1M | growth exponent | 8.8M projected: with the exponent | linear from 1M |", "|---|---|---|---|---|---|"]
    for (k, s), p in sorted(pts.items(), key=lambda x: (int(x[0][0]), x[0][1])):
        p.sort()
        ns, ts = np.array([x[0] for x in p], float), np.array([x[1] for x in p], float)
        if len(p) < 2:
            continue
        e = float(np.polyfit(np.log(ns), np.log(ts), 1)[0])
        last_n, last_t = ns[-1], ts[-1]
        out.append(f"| {k} | {s} | {' / '.join(f'{t:.2f}' for t in ts)} | {e:.2f} | {last_t * (target / last_n) ** e:.1f} | {last_t * target / last_n:.1f} |")
    return "\n".join(out)


if __name__ == "__main__":
    which = sys.argv[1:] or ["fit", "peers", "memory", "bmp", "growth"]
    for w in which:
        print({"fit": fit_table, "peers": peers_table, "memory": memory_table, "bmp": bmp_table, "growth": growth}[w]())
        print()
