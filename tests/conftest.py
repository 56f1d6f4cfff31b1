"""Fixtures shared by every test module; helpers (plain functions) are in ``tests/helpers/``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.beir import write_beir
from helpers.paths import shared_or_skip
from helpers.snakemake import micro_config, run_snakemake


@pytest.fixture(scope="session")
def vaswani_slice(tmp_path_factory) -> Path:
    """A small real slice of Vaswani: 20 queries, their judged documents plus 200 others."""
    src = shared_or_skip("data", "vaswani")
    from lsrbench.data.beir import load_beir_folder

    ds = load_beir_folder(src)
    qids = list(ds.queries)[:20]
    judged = {d for q in qids for d in ds.qrels[q]}
    keep = [d for d in ds.corpus if d in judged]
    keep += [d for d in ds.corpus if d not in judged][:200]
    keep = set(keep)
    corpus = {d: t for d, t in ds.corpus.items() if d in keep}
    qrels = [(q, d, s) for q in qids for d, s in ds.qrels[q].items()]
    return write_beir(tmp_path_factory.mktemp("vaswani_slice"), corpus, {q: ds.queries[q] for q in qids}, qrels)


@pytest.fixture(scope="session")
def tiny_roberta(tmp_path_factory, vaswani_slice) -> Path:
    """A randomly initialised 1-layer RobertaForMaskedLM (a non-BERT family) with a byte-level BPE
    tokenizer trained on the slice: tied head, vocab ~600."""
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import PreTrainedTokenizerFast, RobertaConfig, RobertaForMaskedLM

    out = tmp_path_factory.mktemp("tiny_roberta")
    texts = [json.loads(line)["text"] for line in open(vaswani_slice / "corpus.jsonl")]
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(texts, vocab_size=600, min_frequency=2, special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe, bos_token="<s>", eos_token="</s>", unk_token="<unk>",
                                  pad_token="<pad>", mask_token="<mask>", cls_token="<s>", sep_token="</s>")
    tok.model_max_length = 128
    tok.save_pretrained(out)
    torch.manual_seed(0)
    cfg = RobertaConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=160, pad_token_id=tok.pad_token_id,
                        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, tie_word_embeddings=True)
    RobertaForMaskedLM(cfg).save_pretrained(out)
    return out


@pytest.fixture(scope="session")
def micro_run(tmp_path_factory, vaswani_slice, tiny_roberta) -> dict:
    """One finished micro run of the whole DAG (:mod:`helpers.snakemake`), shared by the
    reliability tests: ``{"work": workdir, "results": workdir/results, "config": config path}``."""
    tmp = tmp_path_factory.mktemp("micro_run")
    cfg = micro_config(tmp, vaswani_slice, tiny_roberta)
    work = tmp / "work"
    work.mkdir()
    run_snakemake("--cores", "2", "-d", str(work), "--configfile", str(cfg))
    return {"work": work, "results": work / "results", "config": cfg}
