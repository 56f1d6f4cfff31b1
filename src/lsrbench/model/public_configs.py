"""The published ``config.json`` of the paper's backbones by hub id, read from public copies (``source``): what
``lsrbench plan`` sizes a backbone not on disk with."""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["PUBLIC_CONFIGS", "public_config", "backbone_config", "config_object"]

_BERT_BASE_UNCASED = {
    "architectures": ["BertForMaskedLM"], "attention_probs_dropout_prob": 0.1, "gradient_checkpointing": False,
    "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "hidden_size": 768, "initializer_range": 0.02,
    "intermediate_size": 3072, "layer_norm_eps": 1e-12, "max_position_embeddings": 512, "model_type": "bert",
    "num_attention_heads": 12, "num_hidden_layers": 12, "pad_token_id": 0, "position_embedding_type": "absolute",
    "transformers_version": "4.6.0.dev0", "type_vocab_size": 2, "use_cache": True, "vocab_size": 30522,
}

# bert-base-uncased's architecture and pretraining, another vocabulary: 28,996 case-sensitive WordPiece terms.
_BERT_BASE_CASED = {**_BERT_BASE_UNCASED, "transformers_version": "4.26.0", "vocab_size": 28996}

_DISTILBERT_BASE_UNCASED = {
    "activation": "gelu", "architectures": ["DistilBertForMaskedLM"], "attention_dropout": 0.1, "dim": 768,
    "dropout": 0.1, "hidden_dim": 3072, "initializer_range": 0.02, "max_position_embeddings": 512,
    "model_type": "distilbert", "n_heads": 12, "n_layers": 6, "pad_token_id": 0, "qa_dropout": 0.1,
    "seq_classif_dropout": 0.2, "sinusoidal_pos_embds": False, "tie_weights_": True, "vocab_size": 30522,
}

_ALBERT_BASE_V2 = {
    "architectures": ["AlbertForMaskedLM"], "attention_probs_dropout_prob": 0, "bos_token_id": 2,
    "classifier_dropout_prob": 0.1, "down_scale_factor": 1, "embedding_size": 128, "eos_token_id": 3,
    "gap_size": 0, "hidden_act": "gelu_new", "hidden_dropout_prob": 0, "hidden_size": 768,
    "initializer_range": 0.02, "inner_group_num": 1, "intermediate_size": 3072, "layer_norm_eps": 1e-12,
    "max_position_embeddings": 512, "model_type": "albert", "net_structure_type": 0, "num_attention_heads": 12,
    "num_hidden_groups": 1, "num_hidden_layers": 12, "num_memory_blocks": 0, "pad_token_id": 0,
    "type_vocab_size": 2, "vocab_size": 30000,
}

_ROBERTA_BASE = {
    "architectures": ["RobertaForMaskedLM"], "attention_probs_dropout_prob": 0.1, "bos_token_id": 0,
    "eos_token_id": 2, "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "hidden_size": 768,
    "initializer_range": 0.02, "intermediate_size": 3072, "layer_norm_eps": 1e-05, "max_position_embeddings": 514,
    "model_type": "roberta", "num_attention_heads": 12, "num_hidden_layers": 12, "pad_token_id": 1,
    "type_vocab_size": 1, "vocab_size": 50265,
}

_MODERNBERT_BASE = {
    "architectures": ["ModernBertForMaskedLM"], "attention_bias": False, "attention_dropout": 0.0,
    "bos_token_id": 50281, "classifier_activation": "gelu", "classifier_bias": False, "classifier_dropout": 0.0,
    "classifier_pooling": "mean", "cls_token_id": 50281, "decoder_bias": True, "deterministic_flash_attn": False,
    "embedding_dropout": 0.0, "eos_token_id": 50282, "global_attn_every_n_layers": 3, "global_rope_theta": 160000.0,
    "hidden_activation": "gelu", "hidden_size": 768, "initializer_cutoff_factor": 2.0, "initializer_range": 0.02,
    "intermediate_size": 1152, "local_attention": 128, "local_rope_theta": 10000.0, "max_position_embeddings": 8192,
    "mlp_bias": False, "mlp_dropout": 0.0, "model_type": "modernbert", "norm_bias": False, "norm_eps": 1e-05,
    "num_attention_heads": 12, "num_hidden_layers": 22, "pad_token_id": 50283, "sep_token_id": 50282,
    "tie_word_embeddings": True, "vocab_size": 50368,
}

# ModernBERT at ModernBERT-base's widths (Ettin's 150M encoder), with Ettin's rotary bases and context.
_ETTIN_ENCODER_150M = {
    **{k: v for k, v in _MODERNBERT_BASE.items() if k not in ("classifier_pooling",)},
    "local_rope_theta": 160000.0, "max_position_embeddings": 7999,
}

# new-impl's NewForMaskedLM at GTE-base's widths (loaded as transformers' gte: lsrbench.model.gte).
_GTE_EN_MLM_BASE = {
    "architectures": ["NewForMaskedLM"], "model_type": "new",
    "auto_map": {"AutoConfig": "Alibaba-NLP/new-impl--configuration.NewConfig",
                 "AutoModelForMaskedLM": "Alibaba-NLP/new-impl--modeling.NewForMaskedLM"},
    "attention_probs_dropout_prob": 0.0, "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "hidden_size": 768,
    "initializer_range": 0.02, "intermediate_size": 3072, "layer_norm_eps": 1e-12, "layer_norm_type": "layer_norm",
    "logn_attention_clip1": False, "logn_attention_scale": False, "max_position_embeddings": 8192,
    "num_attention_heads": 12, "num_hidden_layers": 12, "pack_qkv": True, "pad_token_id": 0,
    "position_embedding_type": "rope", "rope_scaling": {"factor": 2.0, "type": "ntk"}, "rope_theta": 160000,
    "type_vocab_size": 0, "unpad_inputs": True, "use_memory_efficient_attention": True, "vocab_size": 30528,
}

PUBLIC_CONFIGS: dict[str, dict] = {
    "bert-base-uncased": {
        "config": _BERT_BASE_UNCASED,
        "source": "github.com/TPC-NAS/TPC_NAS_Natural_Language_Model bert-base-uncased/config.json @ab19c26 (the hub "
                  "file, BertForMaskedLM, transformers 4.6.0.dev0, with vocab_size edited to 50265 there) and "
                  "github.com/lukyanchikov/NLP bert-base-uncased/config.json @02f5c09 (a fine-tuned copy: vocab_size "
                  "30522); transformers' BertConfig defaults are bert-base-uncased's (its docstring)",
    },
    "bert-base-cased": {
        "config": _BERT_BASE_CASED,
        "source": "a public transformers log printing the hub file read from models--bert-base-cased/snapshots/"
                  "5532cc5.../config.json (BertForMaskedLM, transformers 4.26.0: every key as bert-base-uncased's but "
                  "vocab_size 28996; GitHub code search)",
    },
    "distilbert-base-uncased": {
        "config": _DISTILBERT_BASE_UNCASED,
        "source": "public transformers logs printing the file read from huggingface.co/distilbert-base-uncased/"
                  "resolve/main/config.json (transformers 4.9.1, GitHub code search: 'Model config DistilBertConfig "
                  "{... \"tie_weights_\": true, \"vocab_size\": 30522}'); transformers' DistilBertConfig defaults are "
                  "distilbert-base-uncased's (its docstring)",
    },
    "albert-base-v2": {
        "config": _ALBERT_BASE_V2,
        "source": "github.com/PaddlePaddle/PaddleOCR ppocrvenv/lib/python3.7/site-packages/paddlenlp/transformers/"
                  "albert/modeling.py (PaddleNLP's copy of albert-base-v2's config.json, every key) with "
                  "architectures AlbertForMaskedLM as in public copies of the hub file",
    },
    "roberta-base": {
        "config": _ROBERTA_BASE,
        "source": "github.com/AYaroshevskii/Tweet-Sentiment roberta-base/config.json @21be2ab (widths, vocab_size "
                  "50265, 514 positions, type_vocab_size 1, layer_norm_eps 1e-05); special token ids bos 0, pad 1, "
                  "eos 2 as RobertaConfig's defaults (its docstring names roberta-base)",
    },
    "answerdotai/ModernBERT-base": {
        "config": _MODERNBERT_BASE,
        "source": "transformers' ModernBertConfig (documentation of v4.57 and the installed 5.25: its defaults are "
                  "ModernBERT-base's: 22 x 768, intermediate 1152, vocab 50368, special ids 50281-50283) and the "
                  "model card (149M parameters, 22 layers); MLM logits (1, 11, 50368) in transformers' "
                  "tests/models/modernbert integration test",
    },
    "jhu-clsp/ettin-encoder-150m": {
        "config": _ETTIN_ENCODER_150M,
        "source": "the Ettin model card (jhu-clsp/ettin-encoder-150m, arXiv 2507.11412): ModernBERT architecture and "
                  "tokenizer, the 150M encoder at ModernBERT-base's widths (22 layers, 768 hidden, 1152 intermediate, "
                  "12 heads, vocab 50368); rotary bases 160,000 and 7,999 positions as a published Ettin-17m "
                  "derivative's config (tests/model/test_paper_backbones.py)",
    },
    "Alibaba-NLP/gte-en-mlm-base": {
        "config": _GTE_EN_MLM_BASE,
        "source": "new-impl's config fields as the GTE v1.5 configs publish them (GTE-base widths 12 x 768, "
                  "intermediate 3072, vocabulary 30,528, rope_theta 160,000 with NTK x2, no token types); its own "
                  "config.json was not readable here (tests/model/test_paper_backbones.py)",
    },
}


def config_object(config: dict):
    """The transformers config of a ``config.json`` dict, GTE-MLM's ``new`` registered first."""
    from transformers import CONFIG_MAPPING

    from lsrbench.model.load_options import model_kwargs

    model_kwargs()  # registers lsrbench.model.gte
    return CONFIG_MAPPING[config["model_type"]].from_dict({k: v for k, v in config.items() if k != "auto_map"})


def public_config(model: str) -> dict | None:
    """The published config.json of hub id ``model`` (a copy), or None when it is not in the table."""
    entry = PUBLIC_CONFIGS.get(model) or PUBLIC_CONFIGS.get(model.split("/", 1)[-1])
    return json.loads(json.dumps(entry["config"])) if entry else None


def backbone_config(entry: dict) -> tuple[dict | None, str]:
    """A backbone's config.json and where it was read (its folder, else :data:`PUBLIC_CONFIGS`); ``(None, why)``
    otherwise."""
    model = str(entry["model"])
    local = Path(model).expanduser() / "config.json"
    if local.is_file():
        return json.loads(local.read_text(encoding="utf-8")), str(local)
    config = public_config(model)
    if config is not None:
        name = model if model in PUBLIC_CONFIGS else model.split("/", 1)[-1]
        return config, f"published config of {name}"
    return None, f"{model}: no local config.json and no published config in lsrbench.model.public_configs"
