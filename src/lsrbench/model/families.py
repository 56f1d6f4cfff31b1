"""Backbone families: per ``*ForMaskedLM`` architecture, where its MLM head is, how it is tied, what untying
copies, what the fused pooling captures and its position table."""

from __future__ import annotations

import contextlib

__all__ = ["Family", "FAMILIES", "GENERIC", "family_of", "is_head_key", "replaced_forward"]


class Family:
    """Any ``*ForMaskedLM`` model: its head through transformers' accessors, nothing assumed."""

    name = "generic"
    masked_lm = ""  # the transformers class :func:`family_of` matches
    aliases: tuple[str, ...] = ()
    config_class = ""
    decoder_path = ""
    transform_path = ""  # the head transform whose output is captured
    embeddings_path = ""
    head_keys: tuple[str, ...] = ()
    # Whether the head's bias and the decoder's are one only through tying; None: unknown, untying copies any bias.
    bias_shared: bool | None = None
    position_table = True  # False: rotary
    offset: int | None = None  # None: looked for

    def decoder(self, model):
        """The vocabulary projection (``W_head``, ``b``) of ``model``, or None where it has none."""
        find = getattr(model, "get_output_embeddings", None)
        return find() if callable(find) else None

    def decoder_bias(self, decoder):
        """The decoder's bias as the fused pooling adds it (a vocabulary-long vector), else None."""
        bias = getattr(decoder, "bias", None)
        return bias if bias is not None and bias.ndim == 1 else None

    def capture(self, decoder, forward):
        """Within the block, the decoder's forward is ``forward``: how the fused pooling gets the decoder's input
        without the vocabulary-sized logits."""
        return replaced_forward(decoder, forward)

    def is_tied(self, model, decoder) -> bool:
        """True when the head's weight is the very tensor of the input embeddings."""
        inp = model.get_input_embeddings()
        return inp is not None and decoder.weight.data_ptr() == inp.weight.data_ptr()

    def untie(self, model, decoder) -> None:
        """Give the head its own weight (and a shared bias) and mark the config untied, so a reload keeps it
        untied."""
        from torch import nn

        if self.is_tied(model, decoder):
            decoder.weight = nn.Parameter(decoder.weight.detach().clone())
        if self.bias_shared is not False and getattr(decoder, "bias", None) is not None:
            # A bias shared only through tying would reload freshly initialised once untied: save an own copy.
            decoder.bias = nn.Parameter(decoder.bias.detach().clone())
        # transformers re-ties on load (and in tie_weights()) unless the config says otherwise.
        config = model.config
        for cfg in {id(c): c for c in (config, getattr(config, "get_text_config", lambda: None)())}.values():
            if cfg is not None:
                cfg.tie_word_embeddings = False

    def position_limit(self, model) -> int | None:
        """The most tokens the backbone takes (``max_position_embeddings`` less
        :meth:`position_offset`); None without such a limit in the config."""
        limit = getattr(model.config, "max_position_embeddings", None)
        if not isinstance(limit, int) or limit <= 0:
            return None
        return limit - self.position_offset(model)

    def position_offset(self, model) -> int:
        """Rows of the position table before the first position: ``padding_idx + 1`` in RoBERTa's style, else 0,
        unless the family states :attr:`offset`."""
        import torch

        if self.offset is not None:
            return self.offset
        for module in model.modules():
            padding_idx = getattr(module, "padding_idx", None)
            if isinstance(padding_idx, int) and isinstance(getattr(module, "position_embeddings", None), torch.nn.Embedding):
                return padding_idx + 1
        return 0


class Bert(Family):
    name, masked_lm, config_class = "bert", "BertForMaskedLM", "BertConfig"
    decoder_path, transform_path = "cls.predictions.decoder", "cls.predictions.transform"
    embeddings_path = "bert.embeddings.word_embeddings"
    head_keys = ("predictions.",)
    bias_shared = True  # cls.predictions.bias is cls.predictions.decoder.bias
    offset = 0


class DistilBert(Family):
    name, masked_lm, config_class = "distilbert", "DistilBertForMaskedLM", "DistilBertConfig"
    decoder_path, transform_path = "vocab_projector", "vocab_layer_norm"  # after vocab_transform and GELU
    embeddings_path = "distilbert.embeddings.word_embeddings"
    head_keys = ("vocab_transform", "vocab_projector")
    bias_shared = False  # vocab_projector.bias is the Linear's own
    offset = 0


class Albert(Family):
    """Factorised embeddings: the decoder's input is ``embedding_size`` wide."""

    name, masked_lm, config_class = "albert", "AlbertForMaskedLM", "AlbertConfig"
    decoder_path, transform_path = "predictions.decoder", "predictions.LayerNorm"
    embeddings_path = "albert.embeddings.word_embeddings"
    head_keys = ("predictions.",)
    bias_shared = True  # predictions.bias is predictions.decoder.bias
    offset = 0


class Roberta(Family):
    """Positions are numbered from ``padding_idx + 1``: the table's first rows are never used."""

    name, masked_lm, config_class = "roberta", "RobertaForMaskedLM", "RobertaConfig"
    decoder_path, transform_path = "lm_head.decoder", "lm_head.layer_norm"
    embeddings_path = "roberta.embeddings.word_embeddings"
    head_keys = ("lm_head.",)
    bias_shared = True  # lm_head.bias is lm_head.decoder.bias

    def position_offset(self, model) -> int:
        padding_idx = model.roberta.embeddings.padding_idx
        return padding_idx + 1 if isinstance(padding_idx, int) else 0


class ModernBert(Family):
    """ModernBERT and Ettin: rotary positions, no table; ``head`` and ``decoder`` sit at the top of the
    model."""

    name, masked_lm, config_class = "modernbert", "ModernBertForMaskedLM", "ModernBertConfig"
    decoder_path, transform_path = "decoder", "head"
    embeddings_path = "model.embeddings.tok_embeddings"
    head_keys = ("head.", "decoder.")
    bias_shared = False  # decoder.bias (config.decoder_bias) is the Linear's own
    position_table = False
    offset = 0


class Gte(Family):
    """GTE-MLM: transformers' ``gte`` architecture (:mod:`lsrbench.model.gte`), a BERT-style head tied to the word
    embeddings."""

    name, masked_lm, config_class = "gte", "GteHubForMaskedLM", "GteHubConfig"
    aliases = ("GteForMaskedLM",)
    decoder_path, transform_path = "lm_head.decoder", "lm_head.layer_norm"
    embeddings_path = "gte.embeddings.word_embeddings"
    head_keys = ("lm_head.",)
    bias_shared = False  # lm_head.decoder.bias is the Linear's own (only the weight is tied)
    position_table = False
    offset = 0


FAMILIES: dict[str, Family] = {f.name: f for f in (Bert(), DistilBert(), Albert(), Roberta(), ModernBert(), Gte())}
GENERIC = Family()
_BY_CLASS = {cls: f for f in FAMILIES.values() for cls in (f.masked_lm, *f.aliases)}


@contextlib.contextmanager
def replaced_forward(module, forward):
    """``module.forward`` is ``forward`` within the block (an instance attribute), restored after."""
    had_own = "forward" in module.__dict__
    saved = module.__dict__.get("forward")
    module.forward = forward
    try:
        yield
    finally:
        if had_own:
            module.forward = saved
        else:
            del module.forward


def family_of(model) -> Family:
    """The family of a ``*ForMaskedLM`` model (by its class), :data:`GENERIC` for any other."""
    return _BY_CLASS.get(type(model).__name__, GENERIC)


def is_head_key(key: str) -> bool:
    """Whether a state-dict key names an MLM head parameter, as any registered family names them."""
    return any(part in key for family in FAMILIES.values() for part in family.head_keys)
