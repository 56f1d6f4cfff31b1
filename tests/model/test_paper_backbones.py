"""Each backbone family of config/paper.yaml on the locked transformers: a random model with its
real config.json (vocabulary, padding id, tying, head bias, head transform and norm, activations,
position scheme; only the widths and depth shrunk), saved as its hub checkpoint is stored, loads
through lsrbench's loader with the same outputs, and trains a SPLADE step at k = 4 with its head
divided by 4 (lsrbench's norm -> train path on the real code).

Where each config comes from (no hub access here; public copies found with the search tool):
- bert-base-uncased: the config.json copied into public fine-tunes (``"_name_or_path":
  "bert-base-uncased"``, e.g. huggingface.co/sello-ralethe/bert-base-generics-mlm).
- distilbert-base-uncased: huggingface.co/distilbert/distilbert-base-uncased, config.json (blame at
  00c3efe); the current file adds model_type/architectures and pad_token_id 0.
- albert-base-v2: its config.json as transformers' ALBERT docs and public copies give it
  (embedding_size 128, gelu_new, vocabulary 30,000, no dropout).
- roberta-base: huggingface.co/Cheng98/roberta-base (``"_name_or_path": "FacebookAI/roberta-base"``).
- ModernBERT-base: huggingface.co/unsloth/ModernBERT-base, config.json (a copy of answerdotai's:
  vocabulary 50,368 padded past the tokenizer's 50,280, decoder bias, no norm bias, tied).
- ettin-encoder-150m: ModernBERT's architecture; widths from the Ettin paper (arXiv 2507.11412:
  22 x 768, FFN 1,152) and the field set of a published Ettin-17m derivative (local and global rope
  theta 160,000, 7,999 positions); its own config.json was not readable from here.
- gte-en-mlm-base: new-impl's config fields as the GTE v1.5 configs publish them (vocabulary 30,528,
  rope_theta 160,000 with NTK x2, pack_qkv, unpad_inputs and xformers on, no token types as in
  gte-base-en-v1.5); its own config.json was not readable from here. Stored as new-impl stores it
  (``new.*`` names, packed qkv_proj and up_gate_proj, no decoder weight: tied).
"""

from __future__ import annotations

import json
import math

import pytest

torch = pytest.importorskip("torch")

from helpers.families import tokenizer as stand_in_tokenizer  # noqa: E402
from lsrbench.config.schema import with_defaults  # noqa: E402
from lsrbench.model.checkpoint import check_checkpoint, load_mlm, transformer_folder  # noqa: E402
from lsrbench.model.families import family_of  # noqa: E402
from lsrbench.model.rescale import mlm_head  # noqa: E402
from lsrbench.model.train import train_splade  # noqa: E402

SMALL = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)
BERT = dict(architectures=["BertForMaskedLM"], model_type="bert", attention_probs_dropout_prob=0.1, hidden_act="gelu",
            hidden_dropout_prob=0.1, initializer_range=0.02, layer_norm_eps=1e-12, max_position_embeddings=512,
            pad_token_id=0, position_embedding_type="absolute", type_vocab_size=2, vocab_size=30522)
DISTILBERT = dict(architectures=["DistilBertForMaskedLM"], model_type="distilbert", vocab_size=30522,
                  max_position_embeddings=512, sinusoidal_pos_embds=True, dropout=0.1, attention_dropout=0.1,
                  activation="gelu", initializer_range=0.02, tie_weights_=True, seq_classif_dropout=0.2,
                  qa_dropout=0.1, pad_token_id=0, dim=32, n_layers=2, n_heads=2, hidden_dim=64)
ALBERT = dict(architectures=["AlbertForMaskedLM"], model_type="albert", attention_probs_dropout_prob=0, bos_token_id=2,
              classifier_dropout_prob=0.1, down_scale_factor=1, embedding_size=16, eos_token_id=3, gap_size=0,
              hidden_act="gelu_new", hidden_dropout_prob=0, initializer_range=0.02, inner_group_num=1,
              layer_norm_eps=1e-12, max_position_embeddings=512, net_structure_type=0, num_hidden_groups=1,
              num_memory_blocks=0, pad_token_id=0, type_vocab_size=2, vocab_size=30000)
ROBERTA = dict(architectures=["RobertaForMaskedLM"], model_type="roberta", attention_probs_dropout_prob=0.1,
               bos_token_id=0, eos_token_id=2, hidden_act="gelu", hidden_dropout_prob=0.1, initializer_range=0.02,
               layer_norm_eps=1e-05, max_position_embeddings=514, pad_token_id=1, position_embedding_type="absolute",
               type_vocab_size=1, vocab_size=50265)
MODERNBERT = dict(architectures=["ModernBertForMaskedLM"], model_type="modernbert", attention_bias=False,
                  attention_dropout=0.0, bos_token_id=50281, classifier_activation="gelu", cls_token_id=50281,
                  decoder_bias=True, embedding_dropout=0.0, eos_token_id=50282, global_attn_every_n_layers=3,
                  global_rope_theta=160000.0, hidden_activation="gelu", initializer_cutoff_factor=2.0,
                  initializer_range=0.02, local_attention=128, local_rope_theta=10000.0, max_position_embeddings=8192,
                  mlp_bias=False, mlp_dropout=0.0, norm_bias=False, norm_eps=1e-05, pad_token_id=50283,
                  sep_token_id=50282, tie_word_embeddings=True, vocab_size=50368, num_hidden_layers=3)
ETTIN = {**MODERNBERT, "local_rope_theta": 160000.0, "max_position_embeddings": 7999}
GTE = dict(architectures=["NewForMaskedLM"], model_type="new", auto_map={
               "AutoConfig": "Alibaba-NLP/new-impl--configuration.NewConfig",
               "AutoModelForMaskedLM": "Alibaba-NLP/new-impl--modeling.NewForMaskedLM"},
           attention_probs_dropout_prob=0.0, hidden_act="gelu", hidden_dropout_prob=0.1, initializer_range=0.02,
           layer_norm_eps=1e-12, layer_norm_type="layer_norm", logn_attention_clip1=False, logn_attention_scale=False,
           max_position_embeddings=8192, pack_qkv=True, pad_token_id=0, position_embedding_type="rope",
           rope_scaling={"factor": 2.0, "type": "ntk"}, rope_theta=160000, type_vocab_size=0, unpad_inputs=True,
           use_memory_efficient_attention=True, vocab_size=30528)
# backbone of config/paper.yaml -> (its family, its config, the stand-in tokenizer's style)
BACKBONES = {"bert": ("bert", BERT, "bert"), "distilbert": ("distilbert", DISTILBERT, "bert"),
             "albert": ("albert", ALBERT, "bert"), "roberta": ("roberta", ROBERTA, "roberta"),
             "modernbert": ("modernbert", MODERNBERT, "modernbert"), "ettin": ("modernbert", ETTIN, "modernbert"),
             "gte-mlm": ("gte", GTE, "bert")}
RECIPE = dict(steps=1, batch_size=2, learning_rate=2e-5, lambda_q=5e-5, lambda_d=3e-5, seed=42,
              query_max_length=16, document_max_length=32)


def new_impl_state_dict(model) -> dict:
    """transformers' gte weights under new-impl's names, as the hub checkpoint stores them."""
    sd, out = model.state_dict(), {}
    for i in range(model.config.num_hidden_layers):
        src, dst = f"gte.layers.{i}.", f"new.encoder.layer.{i}."
        out[dst + "attention.qkv_proj.weight"] = torch.cat([sd[f"{src}self_attn.{p}_proj.weight"] for p in "qkv"])
        out[dst + "attention.qkv_proj.bias"] = torch.cat([sd[f"{src}self_attn.{p}_proj.bias"] for p in "qkv"])
        out[dst + "mlp.up_gate_proj.weight"] = torch.cat([sd[src + "mlp.up_proj.weight"], sd[src + "mlp.gate_proj.weight"]])
        for a, b in (("self_attn.o_proj", "attention.o_proj"), ("post_attention_layernorm", "attn_ln"),
                     ("post_mlp_layernorm", "mlp_ln"), ("mlp.down_proj", "mlp.down_proj")):
            for part in ("weight", "bias"):
                out[f"{dst}{b}.{part}"] = sd[f"{src}{a}.{part}"]
    for key, value in sd.items():
        if key.startswith("gte.embeddings."):
            out["new." + key[len("gte."):]] = value
        elif key.startswith("lm_head.") and key != "lm_head.decoder.weight":  # tied: not stored
            out[key.replace("lm_head.layer_norm", "lm_head.norm")] = value
    return {k: v.contiguous() for k, v in out.items()}


def save_checkpoint(backbone: str, folder) -> torch.nn.Module:
    """A random model of the backbone's architecture, saved in ``folder`` as its hub checkpoint is."""
    import transformers
    from safetensors.torch import save_file

    from lsrbench.model.gte import GteHubConfig, GteHubForMaskedLM, gte_config_dict

    family, config, style = BACKBONES[backbone]
    stand_in_tokenizer(folder, style)
    torch.manual_seed(0)
    if family == "gte":
        model = GteHubForMaskedLM(GteHubConfig(**gte_config_dict({**config, **SMALL})))
    else:
        values = {k: v for k, v in config.items() if k not in ("architectures", "model_type")}
        values = values if family == "distilbert" else {**values, **SMALL, **{k: config[k] for k in config
                                                                              if k == "num_hidden_layers"}}
        cls = getattr(transformers, config["architectures"][0])
        model = cls(transformers.AutoConfig.for_model(config["model_type"], **values))
    with torch.no_grad():  # a realistic head: a non-zero bias
        if getattr(mlm_head(model), "bias", None) is not None:
            mlm_head(model).bias.normal_(0.0, 0.5)
    if family == "gte":
        save_file(new_impl_state_dict(model), str(folder / "model.safetensors"), metadata={"format": "pt"})
        (folder / "config.json").write_text(json.dumps({**config, **SMALL}, indent=2))
    else:
        model.save_pretrained(folder)
    return model.eval()


@pytest.mark.parametrize("backbone", list(BACKBONES))
def test_paper_backbone_loads_through_lsrbench_as_stored(backbone, tmp_path):
    """The checks made before a run pass, and the loaded model is the saved one: tied, its real
    vocabulary, the same logits (no head left random, no buffer left uninitialised)."""
    family, config, _ = BACKBONES[backbone]
    folder = tmp_path / backbone
    built = save_checkpoint(backbone, folder)
    check_checkpoint(str(folder), "paper.yaml", f"backbones.{backbone}.model")
    loaded = load_mlm(str(folder), "paper.yaml", f"backbones.{backbone}.model").eval()
    assert family_of(loaded).name == family
    head = mlm_head(loaded)
    assert head.weight.shape[0] == config["vocab_size"]  # the real vocabulary, padded rows included
    assert family_of(loaded).is_tied(loaded, head)  # tied on load, as the hub checkpoint is meant
    ids = torch.tensor([[2, 7, 9, 11, 3], [2, 8, 3, 0, 0]])
    mask = (torch.arange(5) < torch.tensor([[5], [3]])).long()
    with torch.no_grad():
        torch.testing.assert_close(loaded(input_ids=ids, attention_mask=mask).logits,
                                   built(input_ids=ids, attention_mask=mask).logits, rtol=1e-5, atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("backbone", list(BACKBONES))
def test_paper_backbone_trains_a_step_with_its_head_rescaled(backbone, tmp_path):
    """lsrbench's train job on the checkpoint at k = 4, shared mode: one SPLADE step, finite, and
    the saved head is the loaded one divided by 4 (then one small step)."""
    folder = tmp_path / backbone
    save_checkpoint(backbone, folder)
    before = mlm_head(load_mlm(str(folder), "paper.yaml", "model")).weight.detach().norm().item()
    rows = [{"query": f"query {w}", "positive": f"document about {w}", "negative": f"other {w} text"}
            for w in ("cats", "dogs", "birds", "fish")]
    summary = train_splade(str(folder), rows, with_defaults("recipe", RECIPE), tmp_path / "model",
                           tmp_path / "log.jsonl", k=4, mode="shared")
    assert summary["status"]["status"] == "ok" and summary["steps"] == 1
    log = [json.loads(line) for line in (tmp_path / "log.jsonl").read_text().splitlines()]
    assert len(log) == 1 and all(math.isfinite(v) for v in log[0].values() if isinstance(v, float))
    trained = load_mlm(transformer_folder(str(tmp_path / "model")), "paper.yaml", "trained")
    after = mlm_head(trained).weight.detach().norm().item()
    assert after / before == pytest.approx(0.25, rel=0.02)
