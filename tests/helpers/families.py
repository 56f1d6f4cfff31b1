"""Tiny random ``*ForMaskedLM`` checkpoints of the six families (BERT, DistilBERT, ALBERT, RoBERTa,
ModernBERT, GTE; their MLM head transforms differ) with WordPiece tokenizers, and texts of very
different lengths: what the fast encoder and the fused pooling are checked on."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lsrbench.model.families import FAMILIES as FAMILY_SPECS

FAMILIES = list(FAMILY_SPECS)  # bert, distilbert, albert, roberta, modernbert, gte (the seeds follow this order)

# Each family's tiny shape (its config's own names for the widths), given its tokenizer.
TINY = {
    "bert": lambda tok: dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                             max_position_embeddings=64),
    "distilbert": lambda tok: dict(dim=32, n_layers=2, n_heads=2, hidden_dim=64, max_position_embeddings=64),
    "albert": lambda tok: dict(embedding_size=16, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                               intermediate_size=64, max_position_embeddings=64),
    "roberta": lambda tok: dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                                max_position_embeddings=70, bos_token_id=tok.cls_token_id, eos_token_id=tok.sep_token_id),
    "modernbert": lambda tok: dict(hidden_size=32, intermediate_size=64, num_hidden_layers=3, num_attention_heads=2,
                                   max_position_embeddings=64, local_attention=8,
                                   layer_types=["full_attention", "sliding_attention", "full_attention"],
                                   bos_token_id=tok.cls_token_id, eos_token_id=tok.sep_token_id,
                                   cls_token_id=tok.cls_token_id, sep_token_id=tok.sep_token_id),
    "gte": lambda tok: dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                            max_position_embeddings=64, type_vocab_size=1,
                            rope_parameters={"rope_type": "default", "rope_theta": 160000.0}),
}


def classes(spec):
    """A family's ``(masked-LM class, config class)``: transformers', or lsrbench's for a checkpoint
    format transformers reads only through :mod:`lsrbench.model.gte`."""
    import transformers as tf

    from lsrbench.model import gte

    module = gte if hasattr(gte, spec.masked_lm) else tf
    return getattr(module, spec.masked_lm), getattr(module, spec.config_class)

WORDS = (
    "the of and to in is was for on that with as by at from retrieval sparse dense vector query document "
    "model head norm scale learned lexical expansion term weight index search rank score corpus passage "
    "neural language mask token layer attention encoder decoder training loss batch length padding"
).split()
QUERY_LENGTH, DOCUMENT_LENGTH = 12, 40


def texts():
    rng = np.random.default_rng(5)
    texts = ["a", "", "the", "query", "sparse retrieval", "sparse retrieval"]  # duplicates, tiny ones
    texts += ["x" * 9, "y" * 9, "abc defghi", "zz zz zz z"]  # equal character lengths: sort ties
    texts += [" ".join(rng.choice(WORDS, size=n)) for n in rng.integers(1, 90, size=40)]  # up to far past 40 tokens
    texts.append(" ".join(WORDS * 3))
    return texts


def tokenizer(folder: Path, family: str):
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    if family in ("roberta", "modernbert"):
        specials = {"cls": "<s>", "pad": "<pad>", "sep": "</s>", "unk": "<unk>", "mask": "<mask>"}
    else:
        specials = {"cls": "[CLS]", "pad": "[PAD]", "sep": "[SEP]", "unk": "[UNK]", "mask": "[MASK]"}
    order = ["pad", "unk", "cls", "sep", "mask"] if family != "roberta" else ["cls", "pad", "sep", "unk", "mask"]
    vocab = [specials[s] for s in order]
    vocab += sorted(set(WORDS)) + [c for c in "abcdefghijklmnopqrstuvwxyz"] + ["##" + c for c in "abcdefghijklmnopqrstuvwxyz"]
    ids = {t: i for i, t in enumerate(vocab)}
    tok = Tokenizer(models.WordPiece(ids, unk_token=specials["unk"], max_input_chars_per_word=50))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    cls, sep = specials["cls"], specials["sep"]
    tok.post_processor = processors.TemplateProcessing(
        single=f"{cls} $A {sep}", pair=f"{cls} $A {sep} $B {sep}", special_tokens=[(cls, ids[cls]), (sep, ids[sep])]
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, cls_token=cls, sep_token=sep, pad_token=specials["pad"], unk_token=specials["unk"],
        mask_token=specials["mask"], bos_token=cls, eos_token=sep,
    )
    fast.model_max_length = 64
    fast.save_pretrained(folder)
    return fast


def model(family: str, tok, seed: int):
    import torch

    torch.manual_seed(seed)
    if family not in TINY:
        raise ValueError(family)
    kwargs = TINY[family](tok)
    kwargs.update(vocab_size=len(tok), pad_token_id=tok.pad_token_id)
    masked_lm, config_class = classes(FAMILY_SPECS[family])
    m = masked_lm(config_class(**kwargs))
    # A random head gives logits around 0; a non-zero bias and a larger scale give a realistic
    # mix of inactive terms (all tokens negative) and active ones.
    with torch.no_grad():
        head = m.get_output_embeddings()
        if getattr(head, "bias", None) is not None:
            head.bias.normal_(0.0, 0.5)
    return m
