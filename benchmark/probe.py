"""The probe's speed (issue 19, "Must hold"), on one CPU core, and the tiny default's probe report.

Two measurements, each a real probe (:func:`lsrbench.model.probe.probe_backbone` and its parts):

* ``tiny``: the embedded tiny default's whole probe, every (backbone, k, mode) of config/config.yaml
  (SPLADE-tiny and its x10 twin, 8 runs, k auto resolved from the norm stage's head norms), each
  backbone's checkpoint loaded once, on the config's training triplets (``--triplets``: a finished
  run's ``results/triplets/*/triplets.jsonl``; otherwise built as the triplets stage builds them from
  ``../shared``). Target: under 30 s in all. Writes ``results/probe-tiny-default.{md,json,png}``,
  with the trained outcomes beside the probe when ``--metrics`` names that run's metrics.csv.
* ``bert-base``: a random BERT-base (12 x 768, vocabulary 30,522, transformers' ``BertConfig``, no
  download, bert-base-uncased's WordPiece from SPLADE-tiny's folder) at config/paper.yaml's recipe
  (batch 32, lengths 32/256), documents long enough to fill 256 tokens (the worst case). Target:
  at most 30 s per (backbone, k), the load timed apart.

    .venv/bin/python benchmark/probe.py --threads 1 --triplets T --metrics M   # results/probe.json
    .venv/bin/python benchmark/probe.py --threads 1 --quick                    # results/probe-quick.json

``--quick``: 16 tiny-default triplets, and the BERT-base probe on one batch of 4 triplets (the
forward and backward passes are linear in the token count at fixed length: a batch of 32 costs 8
times as much). Each k is timed with gradients and once without (``gradients=False``).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import REPO, SHARED, command_line, machine_info, write_result  # noqa: E402


def _timed(fn, *args, **kwargs):
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn(*args, **kwargs)
    return out, {"wall_s": round(time.perf_counter() - wall, 3), "cpu_s": round(time.process_time() - cpu, 3)}


def _tiny_config() -> dict:
    from lsrbench.config.layers import load_config_files
    from lsrbench.config.schema import validate

    config, _, _ = load_config_files([str(REPO / "config" / "config.yaml")], {"mirror": str(SHARED)})
    return validate(config, "config.schema.yaml", "config/config.yaml")


def _tiny_triplets(config: dict, path: str | None, tmp: Path) -> tuple[list[dict], str]:
    from lsrbench.data.training_sources import build_triplets
    from lsrbench.data.triplets import read_triplets
    from lsrbench.config.grid import n_triplets

    if path:
        return read_triplets(path), path
    td = config["training_data"]
    out = build_triplets(td, n_triplets(config), td["seed"], tmp / "triplets.jsonl", mirror=str(SHARED),
                         full_dir=str(SHARED / "data" / td["dataset"]))
    return read_triplets(out), "built by lsrbench.data.training_sources.build_triplets from ../shared"


def _norm_files(config: dict, tmp: Path) -> dict[str, str]:
    from lsrbench.stages.norm import norm

    files = {}
    for name, entry in config["backbones"].items():
        files[name] = str(tmp / f"{name}.norms.json")
        norm(name, entry, str(SHARED), str(tmp / "cache"), "config/config.yaml", files[name])
    return files


def tiny_default(args, tmp: Path) -> dict:
    """Every probe run of the tiny default, one load per backbone; the report files beside."""
    from lsrbench.model.auto_k import auto_k_from_files
    from lsrbench.model.checkpoint import resolve_model
    from lsrbench.model.probe import probe_backbone
    from lsrbench.config.grid import backbone_modes

    config = _tiny_config()
    triplets, source = _tiny_triplets(config, args.triplets, tmp)
    norms = _norm_files(config, tmp)
    results, timings = [], {}
    for name, entry in config["backbones"].items():
        ks_and_modes = [(k, mode) for mode, ks in backbone_modes(config, name).items() for k in ks]
        auto = (auto_k_from_files(norms[name], norms[config["auto_k"]["reference"]], config["auto_k"])
                if any(k == "auto" for k, _ in ks_and_modes) else None)
        path = resolve_model(entry, str(SHARED), str(tmp / "cache"), "config/config.yaml", name)
        probes, timings[name] = _timed(probe_backbone, path, entry, ks_and_modes, triplets, config["recipe"],
                                       backbone=name, auto_k=auto, n_triplets=args.tiny_triplets)
        timings[name]["runs"] = len(probes)
        results += probes
    total = {key: round(sum(t[key] for t in timings.values()), 3) for key in ("wall_s", "cpu_s")}
    _write_report(config, results, args.metrics, "probe-tiny-default" + ("-quick" if args.quick else ""))
    return {"triplets_source": source, "n_triplets": args.tiny_triplets, "runs": len(results),
            "per_backbone": timings, "total": total, "target_total_s": 30,
            "within_target": total["wall_s"] <= 30}


def _write_report(config: dict, results: list[dict], metrics_csv: str | None, name: str) -> None:
    from lsrbench.report.probe.plots import plot_probe
    from lsrbench.report.probe.report import probe_markdown, probe_outcomes, probe_record
    from lsrbench.report.results import read_metrics

    reference, out = config["auto_k"]["reference"], Path(__file__).resolve().parent / "results"
    outcomes = (probe_outcomes(results, read_metrics(metrics_csv), config["report"], config["backbones"], reference)
                if metrics_csv else None)
    (out / f"{name}.md").write_text(probe_markdown(results, config["backbones"], reference, outcomes=outcomes))
    (out / f"{name}.json").write_text(json.dumps(probe_record(results, reference, outcomes=outcomes), indent=1) + "\n")
    plot_probe(results, config["backbones"], reference, str(out / f"{name}.png"))


def _bert_base_folder(tmp: Path) -> str:
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

    torch.manual_seed(0)
    folder = tmp / "bert-base-random"
    BertForMaskedLM(BertConfig(vocab_size=30522)).save_pretrained(folder)
    AutoTokenizer.from_pretrained(SHARED / "models" / "splade-tiny-msmarco").save_pretrained(folder)
    return str(folder)


def _long_triplets(n: int) -> list[dict]:
    """Vaswani texts: 32-word queries and documents of several abstracts (over 256 tokens)."""
    docs = [json.loads(line)["text"] for line in open(SHARED / "data" / "vaswani" / "corpus.jsonl", encoding="utf-8")]
    joined = [" ".join(docs[i:i + 6]) for i in range(0, 6 * 2 * n, 6)]
    return [{"query": " ".join(joined[2 * i].split()[:32]), "positive": joined[2 * i],
             "negative": joined[2 * i + 1]} for i in range(n)]


def bert_base(args, tmp: Path) -> dict:
    """Load once, then per k: the rescaled copy and its probe, each timed."""
    from lsrbench.model.probe import load_backbone, probe_batches, probe_model, rescaled_copy
    from lsrbench.config.grid import training_seeds
    from lsrbench.config.layers import load_config_files

    config = load_config_files([str(REPO / "config" / "paper.yaml")])[0]
    recipe = dict(config["recipe"], seed=training_seeds(config)[0])  # a config may list seeds only
    recipe["batch_size"] = 4 if args.quick else recipe["batch_size"]
    path = _bert_base_folder(tmp)
    batches = probe_batches(_long_triplets(recipe["batch_size"]), recipe["batch_size"], recipe["seed"])
    model, load = _timed(load_backbone, path, {"model": path}, recipe, "cpu")
    per_k = {}
    for k, gradients in ((1.0, True), (4.0, True), (1.0, False)):
        key = f"{k:g}" + ("" if gradients else " (gradients=False: forward only)")
        result, per_k[key] = _timed(lambda: probe_model(rescaled_copy(model, k, "shared"), batches, recipe,
                                                        gradients=gradients))
        per_k[key] |= {"ranking_loss": result["ranking_loss"], "score_scale": result["score_scale"],
                       "document_active_terms": result["document_active_terms"]}
    tokens = {task: int(sum(model.preprocess([t[c] for t in batches[0]], task=task)["attention_mask"].sum()
                            for c in columns))
              for task, columns in (("query", ["query"]), ("document", ["positive", "negative"]))}
    worst = max(v["wall_s"] for v in per_k.values())
    return {"recipe": {k: recipe[k] for k in ("batch_size", "query_max_length", "document_max_length")},
            "triplets": len(batches[0]), "tokens": tokens, "load": load, "per_k": per_k,
            "target_per_k_s": 30, "within_target": worst <= 30}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (the targets are for one core)")
    ap.add_argument("--triplets", default=None, help="the tiny default's triplets.jsonl of a finished run")
    ap.add_argument("--metrics", default=None, help="that run's results/metrics.csv (trained outcomes in the report)")
    ap.add_argument("--only", choices=["tiny", "bert-base"], default=None)
    ap.add_argument("--output", default=None)
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    from lsrbench.model.probe import PROBE_TRIPLETS

    args.tiny_triplets = 16 if args.quick else PROBE_TRIPLETS
    payload = {"command": command_line(), "machine": machine_info(), "quick": args.quick,
               "note": "timings on a CPU shared with other developers unless stated otherwise: a record needs a quiet machine"}
    with tempfile.TemporaryDirectory() as tmp:
        if args.only in (None, "tiny"):
            payload["tiny_default"] = tiny_default(args, Path(tmp))
        if args.only in (None, "bert-base"):
            payload["bert_base"] = bert_base(args, Path(tmp))
    path = write_result(args.output or ("probe-quick" if args.quick else "probe"), payload)
    print(json.dumps({k: v for k, v in payload.items() if k not in ("machine",)}, indent=1))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
