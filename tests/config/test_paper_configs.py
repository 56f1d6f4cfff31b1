"""The paper configs without a dry run (tests/pipeline/test_paper_config.py has that, with the SLURM
plugin): config/paper.yaml's untie ablation, and config/paper-splade-pp.yaml, the grid under
naver/splade's SPLADE++ recipe, as a user checks it (``lsrbench check-config``), differing from
config/paper.yaml in the recipe only."""

from __future__ import annotations

import yaml

from helpers.cli import lsrbench
from helpers.paths import REPO
from lsrbench.config.layers import load_config_files

# naver/splade conf/config_splade++_max.yaml and conf/train/config/splade.yaml (docs/paper-scale.md)
SPLADE_PP = {"steps": 150000, "batch_size": 128, "learning_rate": 2e-5, "warmup_steps": 6000,
             "query_max_length": 256, "document_max_length": 256, "lambda_q": 3e-4, "lambda_d": 1e-4}


def test_splade_pp_recipe_passes_check_config_and_changes_only_the_recipe():
    proc = lsrbench("check-config", "--configfile", "config/paper-splade-pp.yaml", cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert "(on config/paper.yaml): ok: 9 backbones, 44 runs" in proc.stdout
    paper, _, _ = load_config_files([REPO / "config/paper.yaml"])
    pp, _, files = load_config_files([REPO / "config/paper-splade-pp.yaml"])
    assert [f.rsplit("/", 1)[-1] for f in files] == ["paper.yaml", "paper-splade-pp.yaml"]
    assert {k: pp["recipe"][k] for k in SPLADE_PP} == SPLADE_PP
    # naver/splade's T = 50,000 quadratic warm-up steps, as sentence-transformers' callback counts them
    assert int(pp["recipe"]["steps"] * pp["recipe"]["regularizer_warmup_ratio"]) == 50000
    assert pp["training_data"]["n_triplets"] == pp["recipe"]["steps"] * pp["recipe"]["batch_size"]
    assert {k for k in paper if paper[k] != pp[k]} == {"recipe", "training_data"}
    assert {k for k in paper["training_data"] if paper["training_data"][k] != pp["training_data"][k]} == {"n_triplets"}


def test_untie_ablation_claims_per_backbone():
    """Where shared and untie differ and a claim rests on the largest k (RoBERTa, ALBERT): an untie
    run at k=16 and, per backbone, "the damage comes from the shrunken embeddings" (untie beats
    shared at k=16) beside "the head alone hurts" (untie below the good k)."""
    config = yaml.safe_load((REPO / "config/paper.yaml").read_text())
    for backbone in ("roberta", "albert"):
        assert config["backbones"][backbone]["modes"] == {"shared": config["k_grid"], "untie": [max(config["k_grid"])]}
    assert not any("modes" in config["backbones"][b] for b in ("modernbert", "ettin"))  # embeddings into a LayerNorm
    claims = {c["id"]: c for c in config["claims"]["list"]}
    for backbone, good_k in (("roberta", "best"), ("albert", 1)):
        damage, head = claims[f"{backbone}_damage_from_embeddings"], claims[f"{backbone}_head_alone"]
        assert (damage["type"], damage["expect"]) == ("compare", "greater")
        assert damage["a"] == {"backbone": f"{backbone}+untie", "k": 16} and damage["b"] == {"backbone": backbone, "k": 16}
        assert head["a"] == damage["a"] and head["b"] == {"backbone": backbone, "k": good_k} and head["expect"] == "less"


def test_every_paper_backbone_is_pinned_and_runs_no_remote_code():
    """Each hub backbone at a commit (no floating `main`), none running the hub's remote code."""
    from lsrbench.names import is_commit

    for name in ("paper.yaml", "paper-splade-pp.yaml"):
        config, _, _ = load_config_files([REPO / "config" / name])
        for backbone, entry in config["backbones"].items():
            assert is_commit(entry.get("revision")), (name, backbone, entry.get("revision"))
            assert not entry.get("trust_remote_code"), (name, backbone)


def test_the_controls_vary_one_thing_each():
    """Tying, head scale and vocabulary each against a BERT run that differs in it alone (both sides
    untied where the scale or vocabulary varies); "changes nothing" claims are equivalence tests."""
    config = yaml.safe_load((REPO / "config/paper.yaml").read_text())
    backbones, claims = config["backbones"], {c["id"]: c for c in config["claims"]["list"]}
    assert backbones["bert"]["modes"] == {"shared": config["k_grid"], "untie": [1]}
    scaled, cased = backbones["bert-at-modernbert-scale"], backbones["bert-cased-at-bert-scale"]
    assert scaled["model"] == backbones["bert"]["model"] and scaled["revision"] == backbones["bert"]["revision"]
    assert scaled["head_scale"] == {"match": "modernbert", "statistic": "mean_row_norm", "mode": "untie"}
    assert cased["model"] == "bert-base-cased" and cased["k"] == [1]
    assert cased["head_scale"] == {"match": "bert", "statistic": "mean_row_norm", "mode": "untie"}
    untied_bert = {"backbone": "bert+untie", "k": 1}
    assert (claims["tying_alone_changes_nothing"]["a"], claims["tying_alone_changes_nothing"]["b"]) == (
        untied_bert, {"backbone": "bert", "k": 1})
    assert claims["scale_alone_reproduces_failure"]["b"] == untied_bert
    assert claims["vocabulary_alone_changes_nothing"]["b"] == untied_bert
    assert [claims[c]["expect"] for c in ("tying_alone_changes_nothing", "vocabulary_alone_changes_nothing",
                                          "scale_alone_reproduces_failure", "gap_left_after_rescaling")] == [
        "equivalent", "equivalent", "less", "not_less"]
