"""The tiny default's recipe budget (docs/miniature.md, section 3; issue 30): train the reference
backbone alone (the MLM re-fit of SPLADE-tiny, k = 1, shared) with config/config.yaml's recipe for
``N_max`` steps at each candidate learning rate, then apply the rule written down before any run:

* block means of the logged ranking loss (blocks of ``--block`` steps);
* a run whose last block is not at least 5 % below the chance level ln(2 x batch) (the loss of a
  model that scores every document alike: it does not rank) is out, and so is a non-finite one;
* the learning rate whose last block is lowest among the rest;
* the steps: the end of the first block whose mean is within 5 % of that run's last block.

(The rule as first written, docs/miniature.md "Amendment", chose by the last block alone and put
the plateau where 90 % of the fall from the first block is done; on the reference's curves that
picked a run resting at the chance level, and a plateau that is the end of the scale's collapse,
not of learning to rank.)

    .venv/bin/python benchmark/recipe_budget.py --refit-model results/mlm_refit/<id>/model \
        --full-dir results/data/vaswani/<id>/full          # results/recipe_budget.json

Every curve, block mean and the chosen values are written; nothing here looks at the twin."""

from __future__ import annotations

import argparse
import math
import tempfile
import time

from common import REPO, command_line, machine_info, write_result

LEARNING_RATES = (2e-5, 1e-4, 5e-4, 2e-3)


def block_means(losses: list[float], block: int) -> list[float]:
    """Means of consecutive blocks of ``block`` values (a last partial block is left out)."""
    return [sum(losses[i:i + block]) / block for i in range(0, len(losses) - block + 1, block)]


def budget_rule(curves: dict[float, list[float]], block: int, chance: float, within: float = 0.05) -> dict:
    """The rule of docs/miniature.md on ``{learning rate: ranking loss per step}``: among the runs
    whose last block mean is at least ``within`` below ``chance``, the learning rate whose last block
    is lowest, and the end of its first block within ``within`` of that last block."""
    means = {lr: block_means(c, block) for lr, c in curves.items() if c and all(math.isfinite(x) for x in c)}
    ranking = {lr: m for lr, m in means.items() if m[-1] <= (1 - within) * chance}
    out = {"block_means": {str(r): v for r, v in means.items()}, "chance": chance,
           "ranking_runs": [str(r) for r in ranking]}
    if not ranking:
        return {**out, "learning_rate": None, "steps": None}
    lr = min(ranking, key=lambda r: (ranking[r][-1], r))
    m = ranking[lr]
    done = next(i for i, v in enumerate(m) if v <= (1 + within) * m[-1])
    return {**out, "learning_rate": lr, "steps": (done + 1) * block}


def main() -> None:
    import yaml

    from lsrbench.data.training_sources import build_triplets
    from lsrbench.data.triplets import read_triplets
    from lsrbench.model.train import train_splade
    from lsrbench.model.train_log import read_train_log

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--refit-model", required=True, help="the re-fit checkpoint (results/mlm_refit/<id>/model)")
    p.add_argument("--full-dir", required=True, help="the training data's dataset folder (pseudo-queries)")
    p.add_argument("--n-max", type=int, default=96)
    p.add_argument("--block", type=int, default=8)
    p.add_argument("--config", default=str(REPO / "config/config.yaml"))
    p.add_argument("--output", default="recipe_budget")
    args = p.parse_args()
    import torch

    torch.set_num_threads(1)  # as a local train job
    config = yaml.safe_load(open(args.config, encoding="utf-8"))
    recipe = {**config["recipe"], "steps": args.n_max, "checkpoint_steps": 0}
    recipe.pop("report_to", None)
    recipe.setdefault("weight_decay", 0.0)
    td = config["training_data"]
    n = args.n_max * recipe["batch_size"]
    runs = {}
    with tempfile.TemporaryDirectory() as tmp:
        build_triplets(td, n, td["seed"], f"{tmp}/triplets.jsonl", full_dir=args.full_dir)
        triplets = read_triplets(f"{tmp}/triplets.jsonl")
        for lr in LEARNING_RATES:
            start = time.process_time()
            out = f"{tmp}/lr{lr}"
            summary = train_splade(args.refit_model, triplets, {**recipe, "learning_rate": lr}, f"{out}/model",
                                   f"{out}/log.jsonl")
            rows = read_train_log(f"{out}/log.jsonl")
            runs[lr] = {"ranking_loss": [r["ranking_loss"] for r in rows], "loss": [r["loss"] for r in rows],
                        "status": summary["status"]["status"], "cpu_s": round(time.process_time() - start, 1)}
            print(f"lr {lr}: {runs[lr]['status']}, block means "
                  f"{[round(v, 4) for v in block_means(runs[lr]['ranking_loss'], args.block)]}", flush=True)
    from lsrbench.model.losses import candidates_per_query

    chance = math.log(candidates_per_query(recipe["batch_size"]))
    chosen = budget_rule({lr: r["ranking_loss"] for lr, r in runs.items() if r["status"] == "ok"}, args.block, chance)
    print(f"chosen: learning rate {chosen['learning_rate']}, {chosen['steps']} steps")
    write_result(args.output, {"command": command_line(), "machine": machine_info(), "n_max": args.n_max,
                               "block": args.block, "triplets": n, "recipe": recipe,
                               "runs": {str(lr): r for lr, r in runs.items()}, "chosen": chosen})


if __name__ == "__main__":
    main()
