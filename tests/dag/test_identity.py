"""Every addressed output's folder, and every rule's params that decide whether Snakemake re-runs a
finished job, pinned as literals for the tiny default (config/config.yaml) and the micro run's config:
a change to how stages are declared or where their code lives must find every finished folder again
and re-run nothing for "params changed". An intended change of identity changes these literals in
the same commit. Through snakemake: tests/dag/test_finished_work_dag.py."""

from __future__ import annotations

import copy

from helpers.paths import tiny_default
from helpers.snakemake import layout as micro_layout
from helpers.snakemake import micro_config, toy_inputs
from lsrbench.dag.fingerprint import FileDigests
from lsrbench.dag.layout import Layout
from lsrbench.validation.config import check_config
from lsrbench.hashing import stable_hash
from lsrbench.stages import all_stages


def _tiny_layout() -> Layout:
    config = check_config(copy.deepcopy(tiny_default()), "config/config.yaml", files=False, mirror_must_exist=False)
    return Layout(config, "results", FileDigests(None), stages=all_stages(), config_file="config/config.yaml",
                  config_files=["config/config.yaml"])


def _short(value) -> str:
    return stable_hash(value)[:12]


def _stage_params(layout) -> dict[str, str]:
    """Per addressed stage, the params Snakemake compares (its name and its job's settings, every
    output's), as one short hash."""
    from lsrbench.dag.stage import StageRules

    rules = StageRules(layout)
    out = {}
    for name in layout.stages:
        items = layout.of_stage(name)
        if items:
            params = rules.params(name)
            out[name] = _short([params["stage"], [params["settings"](item.fields) for item in items]])
    return out


def _report_params(layout) -> dict[str, str]:
    """Per report rule of the default target, its params (job, settings, keyed run files), inputs and
    outputs, as one short hash."""
    from lsrbench.report.reports import report_rules, used_reports

    rules = report_rules(layout)
    return {name: _short([rules.params(name), rules.input_files(name), rules.output_files(name)])
            for name in used_reports(layout.config)}


def snapshot(layout) -> dict:
    return {"folders": sorted(item.folder for item in layout.all()), "stages": _stage_params(layout),
            "reports": _report_params(layout)}


def _micro_layout(tmp):
    return micro_layout(micro_config(tmp, *toy_inputs(tmp)))


# python tests/dag/test_identity.py (PYTHONPATH=tests) prints these from the code as it is.
TINY_DEFAULT = {'folders': ['results/bm25/vaswani/062cfa8f2c67',
             'results/configs/e9999f904834',
             'results/data/vaswani/87daa7f792ad',
             'results/data/vaswani/87daa7f792ad/pool20',
             'results/mlm_refit/ff558e55ac06',
             'results/norms/splade-tiny-x10/9f21b0e8add3',
             'results/norms/splade-tiny/e158cd15f642',
             'results/probe/splade-tiny-x10/416469ceba09',
             'results/probe/splade-tiny/d2b454c0cb4a',
             'results/runs/splade-tiny+untie/k16/3828cf4afc6c',
             'results/runs/splade-tiny+untie/k16/3828cf4afc6c/vaswani/b2f649b671d6',
             'results/runs/splade-tiny+untie/k16/3828cf4afc6c/vaswani/b2f649b671d6/4e4572eb72e4',
             'results/runs/splade-tiny-x10/k1/861bbaa39faa',
             'results/runs/splade-tiny-x10/k1/861bbaa39faa/vaswani/4c68fd06a92c',
             'results/runs/splade-tiny-x10/k1/861bbaa39faa/vaswani/4c68fd06a92c/60479ca93dd1',
             'results/runs/splade-tiny-x10/k16/18a417ef6d00',
             'results/runs/splade-tiny-x10/k16/18a417ef6d00/vaswani/dd980a44dbbb',
             'results/runs/splade-tiny-x10/k16/18a417ef6d00/vaswani/dd980a44dbbb/4ed3385e0121',
             'results/runs/splade-tiny/k1/e0b7814a8f5f',
             'results/runs/splade-tiny/k1/e0b7814a8f5f/vaswani/6be58ddbd685',
             'results/runs/splade-tiny/k1/e0b7814a8f5f/vaswani/6be58ddbd685/9fce3bf8c6db',
             'results/runs/splade-tiny/k16/50ad547d2f72',
             'results/runs/splade-tiny/k16/50ad547d2f72/vaswani/25f42b13b231',
             'results/runs/splade-tiny/k16/50ad547d2f72/vaswani/25f42b13b231/a63efbeefa6a',
             'results/triplets/af1859f8d036'],
 'stages': {'mlm_refit': '189434d66b92',
            'norm': '7f3645d8d9a2',
            'triplets': 'ee7d0f2e240f',
            'dataset': 'd6d708b110cd',
            'pool': '2e526d05cb60',
            'probe': 'f1c7f5470b34',
            'train': '59b893634f58',
            'index': 'a9cbee8cc12f',
            'evaluate': 'dd4bca7784e1',
            'bm25': 'bc272f71a07f',
            'config_snapshot': 'afb0f5d9ba30'},
 'reports': {'collect': '03e6f6c810bb',
             'chance': '8549c049e392',
             'table1': '73d533c8eed0',
             'table_beir': 'bd5fc55fb1d0',
             'norms_report': '9b14329a02a2',
             'tradeoff': 'ceab4b9943a8',
             'loss_curves': 'ea39716d8b18',
             'claims': '38971183b6e4',
             'html_table1': '99f6bd54fc69',
             'html_table_beir': '57cce3bc5dc3',
             'html_norms': '418c7035f7d3',
             'html_claims': 'ec7434d1cad0'}}
# the micro config's snapshot and reports name its temporary folder: pinned for the tiny default only
MICRO = {'folders': ['results/bm25/slice/2221433c36f3',
             'results/data/slice/661d648a9af0',
             'results/norms/rand-roberta/caab92b26a1d',
             'results/probe/rand-roberta/229b44af8c9c',
             'results/runs/rand-roberta/k1/f7f4f666224d',
             'results/runs/rand-roberta/k1/f7f4f666224d/slice/dca0101adad7',
             'results/runs/rand-roberta/k1/f7f4f666224d/slice/dca0101adad7/839b87ff7ba8',
             'results/runs/rand-roberta/k1e-30/fd18f18a186a',
             'results/runs/rand-roberta/k1e-30/fd18f18a186a/slice/25173ba4471b',
             'results/runs/rand-roberta/k1e-30/fd18f18a186a/slice/25173ba4471b/5d01f33cc4ab',
             'results/triplets/65b6441c080c'],
 'stages': {'norm': 'dadb0d3ee02a',
            'triplets': '6d95aeb5fc26',
            'dataset': '6b8813112a3d',
            'probe': '763beda3b8d0',
            'train': 'ae4bbff61caa',
            'index': '1ae018ee13e5',
            'evaluate': '07ceae1d44b2',
            'bm25': '16f5de6f0360'}}


def test_the_tiny_defaults_folders_and_params_are_what_they_were():
    assert snapshot(_tiny_layout()) == TINY_DEFAULT


def test_the_micro_configs_folders_and_params_are_what_they_were(tmp_path):
    found = snapshot(_micro_layout(tmp_path))
    found["folders"] = [f for f in found["folders"] if not f.startswith("results/configs/")]
    found["stages"].pop("config_snapshot")
    found.pop("reports")
    assert found == MICRO


if __name__ == "__main__":  # prints the literals below from the code as it is
    import json
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        print(json.dumps({"tiny": snapshot(_tiny_layout()), "micro": snapshot(_micro_layout(Path(tmp)))}, indent=1))
