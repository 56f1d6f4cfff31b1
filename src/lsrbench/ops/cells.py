"""One command per cell (``lsrbench cells``): for every Table 1 row and every claim of a config, the
command that builds it and nothing else, the value it is expected to give (``config/expected/``:
:mod:`lsrbench.report.verify.expected`) and what it costs (a plan of ``lsrbench plan --json``: the row's
share of its backbone's jobs). docs/cells-tiny.md and docs/cells-paper.md are its output for the two
configs of this repository."""

from __future__ import annotations

from lsrbench.config.grid import runs, training_seeds
from lsrbench.names import BM25, format_k, k_order, split_run_name
from lsrbench.report.verify.expected import number_key

__all__ = ["cells_page", "row_cost", "claim_rows"]

# the plan's per-stage quantities a row's cost shows (lsrbench.ops.plan: estimate_jobs), in this order
STAGES = ("train", "index", "evaluate")


def _command(config_args: str, rows: list[tuple[str, str]]) -> str:
    parts = " ".join(f"--row {BM25 if run == BM25 else f'{run}/k{k}'}" for run, k in rows)
    return f"`lsrbench run {parts}{config_args}`"


def row_cost(plan: dict | None, config: dict, run: str) -> dict[str, float] | None:
    """One row of ``run``'s share of its backbone's plan (every row of a backbone runs the same jobs: one
    model per seed, evaluated on every dataset): a GPU config's bill, the train + index GPU-hours band the
    plan's total line sums and evaluate CPU-hours; a CPU config's calibrated hours per stage. None for BM25."""
    if run == BM25:
        return None
    if not plan:
        return {}
    base = split_run_name(run)[0]
    rows = sum(1 for r, _ in runs(config) if split_run_name(r)[0] == base) or 1
    if config.get("use_gpu"):
        from lsrbench.ops.bill_text import backbone_band

        bill = (plan.get("bill") or {}).get(base) or {}
        band = backbone_band(bill)
        if band is None:
            return {}
        cpu = bill.get("evaluate_cpu_hours")
        return {"gpu_hours_low": band[0] / rows, "gpu_hours_high": band[1] / rows,
                **({"evaluate_cpu_hours": cpu / rows} if cpu is not None else {})}
    entry = (plan.get("backbones") or {}).get(base) or {}
    return {key: value / rows for key, value in entry.items()
            if key.endswith("_hours") and isinstance(value, (int, float))}


def _cost_text(cost: dict[str, float] | None, plan: dict | None) -> str:
    if cost is None:
        return "seconds (no training)"
    if not plan:
        return "run `lsrbench plan`"
    if not cost:
        return "not estimated (see the plan)"
    if "gpu_hours_low" in cost:
        cpu = cost.get("evaluate_cpu_hours")
        return f"{cost['gpu_hours_low']:.3g}-{cost['gpu_hours_high']:.3g} GPU-h" + (f", {cpu:.3g} CPU-h" if cpu else "")
    parts = []
    for key, value in cost.items():
        name = key.removesuffix("_hours").replace("_", " ")
        parts.append(f"{name} {value:.2g} h" if value >= 0.01 else f"{name} {value * 3600:.0f} s")
    return ", ".join(parts)


def claim_rows(config: dict, spec: dict) -> list[tuple[str, str]]:
    """The Table 1 rows a claim reads: a fixed k is its row, a selected one (best, max, none) every
    row of the run (the selection reads them all)."""
    from lsrbench.report.claims.engine import claim_type

    grid = runs(config)
    runs_named = [(c.run, c.k) for c in claim_type(spec["type"]).runs(spec)] or \
                 [(r, None) for r in dict.fromkeys(r for r, _ in grid if split_run_name(r)[1] == "shared")]
    out = []
    for run, k in runs_named:
        fixed = k is not None and str(k) not in ("best", "max")
        out += [(r, kk) for r, kk in grid if r == run and (not fixed or kk == format_k(k))]
    return list(dict.fromkeys(out))


def _expected_text(expected: dict | None, key: tuple) -> str:
    entry = (expected or {}).get(key)
    if entry is None or entry.get("expected") is None:
        return "–"
    return f"{entry['expected']:.4f} ± {entry['tolerance']:.4f}"


def _reasons(expected: dict | None, claims: bool) -> list[str]:
    whys = [e["why"] for key, e in (expected or {}).items() if (key[0] == "claim") == claims and e.get("expected") is None]
    return [f"- {why}" for why in dict.fromkeys(whys)]


def _table1_section(config: dict, config_args: str, expected: dict | None, plan: dict | None) -> list[str]:
    report = config["report"]
    columns = [c["name"] for c in report["columns"]]
    rows = ([(BM25, "-")] if report["bm25"] else []) + sorted(runs(config), key=lambda rk: (
        list(config["backbones"]).index(split_run_name(rk[0])[0]), rk[0], k_order(rk[1])))
    lines = ["| row | k | command | " + " | ".join(columns) + " | FLOPs | cost |",
             "|---|---|---|" + "---|" * (len(columns) + 2)]
    measures = {c["name"]: c["measure"] for c in report["columns"]}
    for run, k in rows:
        values = [_expected_text(expected, (run, k, c, measures[c])) for c in columns]
        flops = "–" if run == BM25 else _expected_text(expected, (run, k, "FLOPs", "FLOPs"))
        lines.append(f"| {run} | {k} | {_command(config_args, [(run, k)])} | " + " | ".join(values)
                     + f" | {flops} | {_cost_text(row_cost(plan, config, run), plan)} |")
    return lines


def _claims_section(config: dict, config_args: str, expected: dict | None, plan: dict | None) -> list[str]:
    lines = ["| claim | rows it reads | command (its runs) | expected difference | cost |", "|---|---|---|---|---|"]
    for spec in (config.get("claims") or {}).get("list", []):
        rows = claim_rows(config, spec)
        keys = [k for k in (expected or {}) if k[0] == "claim" and k[1] == spec["id"]]
        diff = "; ".join(f"{k[2] + ': ' if k[2] else ''}{_expected_text(expected, k)}" for k in keys) or "–"
        total: dict[str, float] = {}
        for run, _ in rows:
            for key, value in (row_cost(plan, config, run) or {}).items():
                total[key] = total.get(key, 0.0) + value
        shown = ", ".join(f"{r}/k{k}" for r, k in rows)
        lines.append(f"| `{spec['id']}`: {spec.get('text', '')} | {shown} | {_command(config_args, rows)} | {diff} | "
                     f"{_cost_text(total, plan)} |")
    return lines


def _cost_source(config: dict, plan: dict | None, plan_file: str, seeds: int) -> str:
    """The header's line on where the costs come from."""
    seeds_text = f"{seeds} training seed{'s' if seeds > 1 else ''} per row"
    if not config.get("use_gpu"):
        return (f"`{plan_file}` (`lsrbench plan --json`): the row's share of its backbone's estimated hours per stage "
                f"({seeds_text}); 'not estimated' where the plan could not calibrate the backbone.")
    from lsrbench.ops.bill_text import gpu_hours_band

    band = gpu_hours_band(plan) if plan and plan.get("bill") else None
    return (f"`{plan_file}` (`lsrbench plan --json`'s bill): the row's share of its backbone's train + index GPU-hours "
            f"({plan['gpu']}; {band[2] + '; ' if band else ''}{seeds_text}; the rows sum to the plan's total line) "
            "and evaluate CPU-hours.")


def cells_page(config: dict, config_file: str, expected: dict | None, plan: dict | None, expected_file: str | None,
               plan_file: str | None) -> str:
    """The page: how to read it, then Table 1's rows and the claims, one table each."""
    config_args = "" if config_file == "config/config.yaml" else f" --configfile {config_file}"
    by_key = {number_key(e): e for e in [*((expected or {}).get("table1") or []), *((expected or {}).get("claims") or [])]}
    seeds = training_seeds(config)
    lines = [f"# One command per cell: {config_file}", "",
             f"Generated by `lsrbench cells{config_args}"
             + (f" --expected {expected_file}" if expected_file else "") + (f" --plan {plan_file}" if plan_file else "")
             + "`; do not edit. `lsrbench run --row RUN/kK` builds one Table 1 row (or the rows a claim reads) and "
             "nothing else; add `--mirror DIR`, `--dry-run` (list the jobs) or `--cores N`. The value is then in "
             f"`results/metrics.csv`; Table 1: `snakemake --cores 2 results/table1.md{config_args}`; verdicts: "
             "`results/claims.md` (Holm over all claims). Costs leave out the jobs rows share (data, MLM re-fit, "
             "triplets, norms, BM25: minutes).", ""]
    lines += ["Expected: " + (f"`{expected_file}` (value ± tolerance, [docs/expected.md](expected.md)); "
                              "`lsrbench expected` checks a finished folder against it." if expected_file else
                              "no expected-values file for this config.")]
    lines += ["Cost: " + (_cost_source(config, plan, plan_file, len(seeds)) if plan_file else
                          "run `lsrbench plan` for this config."), ""]
    shown = by_key if expected else None
    for title, section, claims in (("Table 1", _table1_section, False), ("Claims", _claims_section, True)):
        reasons = _reasons(shown, claims)
        lines += [f"## {title}", "", *section(config, config_args, shown, plan), ""]
        lines += (["–: no expected value, because", *reasons, ""] if reasons else [])
    return "\n".join(lines) + "\n"
