"""The expected values of config/expected/ (docs/expected.md), each derived by one stated rule.

* ``tiny``: from the tiny default trained with several training seeds (benchmark/tiny_default_seeds.yaml:
  config/config.yaml's runs, the same MLM re-fit and triplets, ``recipe.seeds``), its metrics.csv with a
  seed column. Every number of Table 1 (made from each seed's own metrics, as Table 1 makes it) and
  every tested claim's difference (each seed's runs, selected as the claim selects them), over the seeds:

  - expected: the mean over the seeds, and each seed's own value on each CPU model it was run on
    (``exact``: the seeds run's machine, and each ``--reproduced`` record of the config's seed): a run
    of that seed on that CPU model must give it exactly (4 decimals, or the record's 6 significant digits);
  - a number no seed changes (BM25's): half a unit of the last digit Table 1 prints;
  - any other, for a run whose bits cannot match: the two-sided 95 % prediction interval of one new
    run under a normal model of the seeds, ``t(0.975, n - 1) * s * sqrt(1 + 1 / n)`` (s: the sample
    standard deviation over the n seeds; 2.78 s with 6 seeds);
  - ``joint``: the mean over the seed-varying runs of each run's claims-measure z ((found - mean) / s),
    held to its own prediction interval over the seeds (the runs of one seed move together: their
    z are correlated, so its spread is measured, not assumed): a shift hitting every run;
  - each tested claim's verdict in the record of the config's own seed (``--verdicts``: its claims.json).

* ``paper``: config/paper_reference.yaml's values (the paper's, at three decimals; it reports no seeds,
  standard deviations or intervals), each to within its rounding: 0.0005, and 0.001 for a difference
  of two rounded values; every other Table 1 number and claim listed without a value, saying why.

    python benchmark/expected_values.py tiny benchmark/results/tiny_default_seeds-metrics.csv \
        --verdicts benchmark/results/tiny_default-claims.json > config/expected/tiny.yaml
    python benchmark/expected_values.py paper > config/expected/paper.yaml
    python benchmark/expected_values.py records METRICS.csv ...     # other records against tiny.yaml
"""

from __future__ import annotations

import argparse
import math
import sys

from common import REPO, command_line, machine_info

ALPHA = 0.05
PAPER_ROUNDING = 0.0005
NO_DIFFERENCE = {
    "norm_best_k_correlation": "a rank correlation of the best k with the head norm, not a difference",
    "frontier": "a dominance test over the rescaled runs, not one difference",
    "loss": "descriptive (training-loss statistics, no test)",
    "best_k_matches_paper": "compares a best k with the paper's; its runs' Table 1 numbers are checked",
}


def _config(path: str) -> dict:
    from lsrbench.cli_options import load_config

    return load_config([path], check_files=False)[0]


def _table_numbers(metrics, config: dict) -> tuple[dict, dict]:
    """Table 1's numbers of one seed's metrics (key -> value) and their printed formats."""
    from lsrbench.report.verify.expected import table1_numbers
    from lsrbench.report.tables.table1 import table1_cells

    cells = table1_cells(metrics, config["report"], config["backbones"])
    formats = {(row["backbone"], row["k"], cell["column"], n["measure"]): n["format"]
               for row in cells["rows"] for cell in row["cells"] for n in cell.get("numbers", []) if "measure" in n}
    return table1_numbers(cells), formats


def claim_pairs(ev, settings, spec: dict) -> dict[str, tuple]:
    """backbone ('' for one pair) -> the two runs a tested claim compares, k resolved as the claim does."""
    from lsrbench.report.claims.evidence import best_k, resolve_k

    if spec["type"] == "compare":
        a, b = ((spec[x]["backbone"], resolve_k(ev, settings, spec[x]["backbone"], spec[x]["k"])) for x in ("a", "b"))
        return {"": (a, b)} if a != b else {}
    if spec["type"] == "best_k_above":
        return {run: ((run, best_k(ev, settings, run, above=float(spec.get("above", 1)))), (run, "1"))
                for run in spec["backbones"]}
    return {}


def claim_numbers(metrics, config: dict) -> dict[tuple, float]:
    """Each tested claim's difference on one seed's metrics: its two runs' mean scores apart."""
    from lsrbench.report.claims.evidence import Evidence, Settings
    from lsrbench.report.results import mean_score

    settings, ev, out = Settings.from_config(config["claims"]), Evidence(metrics=metrics), {}
    for spec in config["claims"]["list"]:
        s = settings.for_claim(spec)
        for backbone, (a, b) in claim_pairs(ev, s, spec).items():
            if a[1] is None or b[1] is None:
                continue
            ma, mb = (mean_score(metrics, run, k, s.measure, s.datasets) for run, k in (a, b))
            if ma is not None and mb is not None:
                out[("claim", spec["id"], backbone, "")] = ma - mb
    return out


def seed_values(metrics, config: dict) -> tuple[dict[tuple, dict[str, float]], dict]:
    """Key -> {seed: value} (Table 1's numbers and claims' differences), and Table 1's formats."""
    from lsrbench.report.seeds import per_seed

    values: dict[tuple, dict[str, float]] = {}
    formats: dict = {}
    for seed, frame in per_seed(metrics).items():
        numbers, formats = _table_numbers(frame, config)
        for key, value in {**numbers, **claim_numbers(frame, config)}.items():
            if value is not None:
                values.setdefault(key, {})[seed] = float(value)
    return values, formats


def _interval(n: int) -> float:
    """t(0.975, n - 1) * sqrt(1 + 1/n): the 95 % prediction interval of one new run, in seed sds."""
    from scipy.stats import t as student

    return float(student.ppf(1 - ALPHA / 2, n - 1)) * math.sqrt(1 + 1 / n)


def _sd(v: list[float]) -> float:
    mean = sum(v) / len(v)
    return math.sqrt(sum((x - mean) ** 2 for x in v) / (len(v) - 1))


def tolerances(values: dict[tuple, dict[str, float]], formats: dict) -> dict[tuple, dict]:
    """The rule of the module's docstring, per key."""
    out = {}
    for key, by_seed in values.items():
        v = list(by_seed.values())
        n, mean = len(v), sum(v) / len(v)
        if max(v) - min(v) <= 1e-12:
            digits = int(formats.get(key, ".4f")[1:-1])
            out[key] = {"expected": mean, "tolerance": 0.5 * 10 ** -digits, "basis": "deterministic"}
            continue
        s = _sd(v)
        out[key] = {"expected": mean, "tolerance": _interval(n) * s, "basis": "seeds", "sd": s,
                    "range": [min(v), max(v)]}
    return out


def joint(values: dict, rules: dict, measure: str) -> dict:
    """The joint check: per seed, the mean over the seed-varying runs of their ``measure`` z; its
    prediction interval over the seeds (their sd measured: one seed moves every run)."""
    keys = [k for k in values if k[0] != "claim" and k[3] == measure and rules[k]["basis"] == "seeds"]
    seeds = list(values[keys[0]])
    per_seed = {s: sum((values[k][s] - rules[k]["expected"]) / rules[k]["sd"] for k in keys) / len(keys) for s in seeds}
    sd = _sd(list(per_seed.values()))
    return {"measure": measure, "runs": [[k[0], k[1]] for k in keys], "sd": round(sd, 4),
            "tolerance": math.ceil(_interval(len(seeds)) * sd * 1e4) / 1e4,
            "seeds": {s: round(v, 4) for s, v in per_seed.items()}}


def _entry(key: tuple, fields: dict) -> dict:
    head = ({"claim": key[1], **({"backbone": key[2]} if key[2] else {})} if key[0] == "claim"
            else {"backbone": key[0], "k": key[1], "column": key[2], "measure": key[3]})
    out = dict(head)
    if fields.get("expected") is None:
        return {**out, "expected": None, "why": fields["why"]}
    out["expected"] = round(fields["expected"], 4)
    out["tolerance"] = math.ceil(fields["tolerance"] * 1e4 - 1e-9) / 1e4  # rounded up, never below the rule
    out["basis"] = fields["basis"]
    if "sd" in fields:
        out["sd"] = round(fields["sd"], 5)
        out["seed_range"] = [round(x, 4) for x in fields["range"]]
    if "exact" in fields:  # the records' digits
        out["exact"] = {cpu: {seed: float(f"{v:.6g}") for seed, v in by_seed.items()} for cpu, by_seed in fields["exact"].items()}
    if fields.get("verdict"):
        out["verdict"] = fields["verdict"]
    return out


def _dump(doc: dict, header: str) -> str:
    """YAML with one line per entry (flow style), the header as comments."""
    import yaml

    lines = [f"# {line}".rstrip() for line in header.strip().splitlines()]
    for key, value in doc.items():
        if isinstance(value, list) and value and isinstance(value[0], dict):
            lines.append(f"{key}:")
            lines += [f"  - {yaml.safe_dump(e, default_flow_style=True, width=10**6, sort_keys=False).strip()}"
                      for e in value]
        else:
            lines.append(yaml.safe_dump({key: value}, default_flow_style=False, width=100, sort_keys=False).rstrip())
    return "\n".join(lines) + "\n"


def _unchecked_claims(config: dict, checked: set[str]) -> list[dict]:
    out = []
    for spec in config["claims"]["list"]:
        if spec["id"] not in checked:
            why = NO_DIFFERENCE.get(spec["type"], "its two sides are one model here: no difference to test")
            out.append({"claim": spec["id"], "expected": None, "why": why})
    return out


def reproduced(values: dict, config: dict, seed: str, records: list[str]) -> tuple[dict, dict]:
    """Each record (``CPU model=metrics.csv``: a fresh run of the config's own seed on that CPU): its
    numbers by key, and against the seeds run's values of that seed, what agrees ("every number
    equal at 6 significant digits", else how many differ and by how much at most)."""
    import pandas as pd

    found, agreement = {}, {}
    for record in records:
        cpu, _, path = record.rpartition("=")
        frame = pd.read_csv(path, dtype={"backbone": str, "k": str, "dataset": str, "measure": str})
        found[cpu] = {k: v for k, v in {**_table_numbers(frame, config)[0], **claim_numbers(frame, config)}.items()
                      if v is not None}
        diffs = {k: abs(float(f"{found[cpu][k]:.6g}") - float(f"{v[seed]:.6g}")) for k, v in values.items()
                 if seed in v and k in found[cpu]}
        differ = [k for k, d in diffs.items() if d > 0]
        agreement[cpu] = (f"{path}: every number equal at 6 significant digits" if not differ else
                          f"{path}: {len(differ)} of {len(diffs)} numbers differ from seed {seed}'s record, by up to "
                          f"{max(diffs[k] / (_sd(list(values[k].values())) or 1) for k in differ):.2f} seed sd")
    return found, agreement


def _seed_runs(metrics_csv: str, machine: str, more: list[str], config: dict) -> tuple[dict, dict, dict, list]:
    """The seeds runs (``metrics_csv`` made on ``machine``; each of ``more``: ``CPU model=metrics.csv``
    of further seeds made on that CPU): key -> {seed: value} over all of them, Table 1's formats, CPU
    model -> key -> {seed: value} (each CPU's own seeds) and the frames read."""
    import pandas as pd

    from lsrbench.names import SEED

    values, by_cpu, formats, frames = {}, {}, {}, []
    for cpu, path in [(machine, metrics_csv), *(m.rpartition("=")[::2] for m in more)]:
        frame = pd.read_csv(path, dtype={"backbone": str, "k": str, SEED: str, "dataset": str, "measure": str})
        own, formats = seed_values(frame, config)
        for key, by_seed in own.items():
            if set(by_seed) & set(values.get(key, {})):
                raise SystemExit(f"{path}: seeds {sorted(set(by_seed) & set(values[key]))} are in another record too")
            values.setdefault(key, {}).update(by_seed)
            by_cpu.setdefault(cpu, {}).setdefault(key, {}).update(by_seed)
        frames.append((cpu, path, frame))
    return values, formats, by_cpu, frames


def tiny(metrics_csv: str, config_file: str, verdicts: str | None = None, records: list[str] = (),
         machine: str | None = None, more_seeds: list[str] = ()) -> str:
    import json

    from lsrbench.report.seeds import seeds_of

    config = _config(config_file)
    machine = machine or machine_info()["cpu"]
    values, formats, by_cpu, frames = _seed_runs(metrics_csv, machine, list(more_seeds), config)
    rules = tolerances(values, formats)
    seed = str(config["recipe"]["seed"])
    recorded = {c["id"]: c["verdict"] for c in json.loads(open(verdicts).read())["claims"]} if verdicts else {}
    for key, rule in rules.items():
        if key[0] == "claim" and key[1] in recorded:
            rule["verdict"] = recorded[key[1]]
    found, checked = reproduced(values, config, seed, list(records))
    for key, rule in rules.items():
        rule["exact"] = {cpu: dict(own[key]) for cpu, own in by_cpu.items() if key in own}
        for cpu, f in found.items():
            if key in f:
                rule["exact"].setdefault(cpu, {})[seed] = f[key]
    table = [_entry(k, rules[k]) for k in values if k[0] != "claim"]
    claims = [_entry(k, rules[k]) for k in values if k[0] == "claim"]
    claims += [{**c, "verdict": recorded[c["claim"]]} if c["claim"] in recorded else c
               for c in _unchecked_claims(config, {c["claim"] for c in claims})]
    seeds = [s for _, _, frame in frames for s in seeds_of(frame)]
    doc = {
        "config": config_file,
        "config_id": _config_id(config_file),
        "config_seed": seed,
        "measured": {"runs": f"{config_file}'s runs with training seeds {', '.join(seeds)} (recipe.seeds; the same "
                             "MLM re-fit, triplets and recipe): benchmark/tiny_default_seeds*.yaml",
                     "seeds_by_cpu": {cpu: ", ".join(seeds_of(frame)) for cpu, _, frame in frames},
                     "metrics": [path for _, path, _ in frames], "made_by": command_line(), "machine": machine,
                     "verdicts": verdicts or "none recorded",
                     "reproduced": checked or "no other record given",
                     "second_cpu_tolerance": "none set: one run of one seed per other CPU model gives one difference "
                                             "per number, not a spread"},
        "bases": {
            "exact": "each recorded seed's own value on each CPU model it was run on (exact: CPU model -> seed -> "
                     "value), at 4 decimals or the record's 6 significant digits: a run of that seed on that CPU "
                     "model gives it exactly, any other value is a FAIL",
            "seeds": f"where bits cannot match: the mean over the {len(seeds)} seeds, tolerance t(0.975, {len(seeds) - 1}) "
                     f"* sd * sqrt(1 + 1/{len(seeds)}) = {_interval(len(seeds)):.2f} sd: the 95 % prediction interval "
                     "of one new run",
            "deterministic": "the same in every seed: half a unit of the last digit Table 1 prints",
        },
        # what lsrbench expected scales a tolerance with for a folder of several seeds' means
        "seeds_rule": {"n": len(seeds), "quantile": round(_interval(len(seeds)) / math.sqrt(1 + 1 / len(seeds)), 4)},
        "joint": joint(values, rules, config["claims"]["measure"]),
        "table1": table,
        "claims": claims,
    }
    return _dump(doc, "Expected values of config/config.yaml's results: generated by benchmark/expected_values.py "
                      "(do not edit; docs/expected.md).")


def _paper_table(config: dict, reference: dict) -> list[dict]:
    """Every Table 1 number of the paper config: the reference's value where it gives one."""
    from lsrbench.config.grid import runs
    from lsrbench.names import BM25, DOC_DIMS, FLOPS, QUERY_DIMS

    rows = ([(BM25, "-")] if config["report"]["bm25"] else []) + runs(config)
    columns = [(c["name"], c["measure"]) for c in config["report"]["columns"]]
    out = []
    for run, k in rows:
        for column, measure in columns + ([] if run == BM25 else [("FLOPs", FLOPS), ("q / d dims", QUERY_DIMS),
                                                                      ("q / d dims", DOC_DIMS)]):
            value = (reference.get(run) or {}).get(int(k) if k.isdigit() else k, {}).get(column)
            fields = ({"expected": value, "tolerance": PAPER_ROUNDING, "basis": "paper"} if value is not None
                      else {"why": "the paper reports no value for it (config/paper_reference.yaml)"})
            out.append(_entry((run, k, column, measure), fields))
    return out


def _paper_claims(config: dict, reference: dict, optimal: dict) -> list[dict]:
    """Each claim's difference where the paper gives both of its runs' values (a best k: the paper's)."""
    column = next(c["name"] for c in config["report"]["columns"]
                  if c["measure"] == config["claims"]["measure"] and c["datasets"] == config["claims"]["datasets"])

    from lsrbench.config.grid import runs
    from lsrbench.names import k_value

    def value(run, k):
        if k == "max":
            k = max((kk for r, kk in runs(config) if r == run and k_value(kk) is not None), key=k_value, default=None)
        elif k == "best":
            k = optimal.get(run)  # the paper's best k
        k = None if k is None else k_value(k)
        return None if k is None or k != int(k) else (reference.get(run) or {}).get(int(k), {}).get(column)

    out = []
    for spec in config["claims"]["list"]:
        if spec["type"] == "compare":
            pairs = {"": ((spec["a"]["backbone"], spec["a"]["k"]), (spec["b"]["backbone"], spec["b"]["k"]))}
        elif spec["type"] == "best_k_above":
            pairs = {run: ((run, "best"), (run, 1)) for run in spec["backbones"]}
        else:
            out.append({"claim": spec["id"], "expected": None, "why": NO_DIFFERENCE[spec["type"]]})
            continue
        for backbone, (a, b) in pairs.items():
            va, vb = value(*a), value(*b)
            key = ("claim", spec["id"], backbone, "")
            out.append(_entry(key, {"expected": va - vb, "tolerance": 2 * PAPER_ROUNDING, "basis": "paper"}
                              if va is not None and vb is not None else
                              {"why": "the paper reports no value for one of its runs (config/paper_reference.yaml)"}))
    return out


def paper(config_file: str) -> str:
    import yaml

    config = _config(config_file)
    ref = yaml.safe_load((REPO / config["report"]["reference"]).read_text(encoding="utf-8"))
    values, optimal = ref.get("values") or {}, ref.get("optimal_k") or {}
    doc = {
        "config": config_file,
        "config_id": _config_id(config_file),
        "measured": {"source": f"{ref.get('source')}, as config/paper_reference.yaml records it: three decimals, "
                               "no seeds, standard deviations or intervals reported"},
        "bases": {"paper": f"the paper's value to within its rounding ({PAPER_ROUNDING}; a difference of two rounded "
                           f"values {2 * PAPER_ROUNDING}); the paper reports no variation, so a reproduction outside "
                           "it is not thereby wrong: compare with the spread of several seeds (recipe.seeds)"},
        "table1": _paper_table(config, values),
        "claims": _paper_claims(config, values, optimal),
    }
    return _dump(doc, "Expected values of config/paper.yaml's results: the paper's, generated by "
                      "benchmark/expected_values.py (do not edit; docs/expected.md).")


def _config_id(config_file: str) -> str:
    """The id of the config snapshot the reports of ``config_file`` name (``Made with config <id>``)."""
    from lsrbench.cli_options import load_config
    from lsrbench.dag.layout import Layout
    from lsrbench.stages import all_stages

    config, read = load_config([config_file], check_files=False)
    return Layout(config, "results", stages=all_stages(), config_file=config_file, config_files=read).get("configs").fields["config_id"]


def records(expected_file: str, config_file: str, files: list[str]) -> str:
    """Each recorded metrics.csv (another machine's, another commit's) against the expected values:
    a Markdown table of every Table 1 nDCG@10, found in each record, [OK] or [FAIL]."""
    import pandas as pd

    from lsrbench.report.verify.expected import load_expected

    config = _config(config_file)
    expected = {(e["backbone"], e["k"], e["column"], e["measure"]): e for e in load_expected(expected_file)["table1"]}
    found = {}
    for path in files:
        numbers, _ = _table_numbers(pd.read_csv(path, dtype={"backbone": str, "k": str}), config)
        found[path] = numbers
    keys = [k for k in expected if k[3] == "nDCG@10"]
    lines = ["| row | k | expected | " + " | ".join(files) + " |", "|---|---|---|" + "---|" * len(files)]
    for key in keys:
        e = expected[key]
        cells = []
        for path in files:
            v = found[path].get(key)
            cells.append("–" if v is None else f"{v:.4f} {'OK' if abs(v - e['expected']) <= e['tolerance'] else 'FAIL'}")
        lines.append(f"| {key[0]} | {key[1]} | {e['expected']:.4f} ± {e['tolerance']:.4f} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("which", choices=["tiny", "paper", "records"])
    parser.add_argument("metrics", nargs="*", help="tiny: the metrics.csv of the seeds run; records: metrics.csv files")
    parser.add_argument("--config", help="the config (default: config/config.yaml, config/paper.yaml)")
    parser.add_argument("--machine", help="tiny: the CPU model the seeds run was made on (default: this machine's)")
    parser.add_argument("--verdicts", help="tiny: the claims.json of a run of the config's own seed (its verdicts)")
    parser.add_argument("--reproduced", action="append", default=[], metavar="CPU=METRICS",
                        help="tiny: a fresh run's metrics.csv of the config's own seed on CPU model CPU (repeatable)")
    parser.add_argument("--seeds-run", action="append", default=[], metavar="CPU=METRICS",
                        help="tiny: a seeds run of further seeds made on CPU model CPU (repeatable): in the "
                             "interval with the others, exact on that CPU")
    args = parser.parse_args(argv)
    if args.which == "tiny":
        if len(args.metrics) != 1:
            parser.error("tiny needs the seeds run's metrics.csv")
        sys.stdout.write(tiny(args.metrics[0], args.config or "config/config.yaml", args.verdicts, args.reproduced,
                              args.machine, args.seeds_run))
    elif args.which == "records":
        sys.stdout.write(records("config/expected/tiny.yaml", args.config or "config/config.yaml", args.metrics))
    else:
        sys.stdout.write(paper(args.config or "config/paper.yaml"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
