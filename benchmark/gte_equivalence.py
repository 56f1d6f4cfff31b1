"""GTE-MLM as lsrbench loads it (transformers 5's ``gte``, :mod:`lsrbench.model.gte`) against
new-impl's own code (``Alibaba-NLP/new-impl``, the hub checkpoint's remote code, Apache-2.0) run
under transformers 4, on the same random weights.

For each case a transformers-4 interpreter (``--tf4-python``: a separate virtual environment, e.g.
``python -m venv /work/venv-tf4 && /work/venv-tf4/bin/pip install transformers==4.49.0`` with torch)
builds new-impl's ``NewForMaskedLM`` from its ``configuration.py`` / ``modeling.py``, perturbs every
parameter, saves the checkpoint as the hub stores it (``new.*`` names, packed ``qkv_proj`` and
``up_gate_proj``, no separate decoder weight) and its outputs on a padded batch. This process loads
the checkpoint with lsrbench's loader (``load_mlm``), then again after ``save_pretrained``, and
compares every hidden state (embeddings and each layer) and the MLM logits on the non-padding tokens.

    .venv/bin/python benchmark/gte_equivalence.py --tf4-python /work/venv-tf4/bin/python \\
        --new-impl /path/to/new-impl      # results/gte_equivalence.json (--quick: tiny cases only)

Without ``--new-impl`` the two files are downloaded from the hub at the pinned commit
(``lsrbench.model.gte.NEW_IMPL_CODE_REVISION``); their SHA-256 are recorded either way.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import tempfile
from pathlib import Path

from common import command_line, machine_info, write_result  # benchmark/common.py

HERE = Path(__file__).resolve().parent
CODE_FILES = ("configuration.py", "modeling.py")
# The real shape: bert-base-uncased's vocabulary padded to 30,528, 12 x 768, 12 heads, FFN 3,072,
# 8,192 positions with fixed NTK scaling (the architecture of gte-en-mlm-base; config values of the
# family's published configs, see the report).
REAL = dict(vocab_size=30528, hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072,
            max_position_embeddings=8192, rope_theta=500000.0, rope_scaling={"type": "ntk", "factor": 2.0},
            type_vocab_size=0)
TINY = dict(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=48,
            max_position_embeddings=64, rope_theta=160000.0)
CASES = [
    {"name": "tiny, rope, no token types, eager", "config": {**TINY, "type_vocab_size": 0}, "attn": "eager", "length": 20},
    {"name": "tiny, NTK x2, 2 token types, sdpa", "config": {**TINY, "type_vocab_size": 2,
                                                              "rope_scaling": {"type": "ntk", "factor": 2.0}},
     "attn": "sdpa", "length": 20},
    {"name": "tiny, unpacked q/k/v, 1 token type", "config": {**TINY, "type_vocab_size": 1, "pack_qkv": False},
     "attn": "eager", "length": 20},
    {"name": "real shape (12 x 768, vocab 30,528), NTK x2", "config": REAL, "attn": "sdpa", "length": 256, "real": True},
]

# Runs under transformers 4: new-impl's code builds, perturbs, saves, and records its outputs.
CHILD = r'''
import json, sys, torch
sys.path.insert(0, sys.argv[1])
from new_impl.configuration import NewConfig
from new_impl.modeling import NEW_ATTENTION_CLASSES, NewForMaskedLM
case, out = json.loads(sys.argv[2]), sys.argv[3]
config = NewConfig(pad_token_id=0, hidden_act="gelu", **case["config"])
config._attn_implementation = "eager"
torch.manual_seed(0)
model = NewForMaskedLM(config).eval()
for layer in model.new.encoder.layer:  # new-impl's own SDPA attention (same parameters), where a
    layer.attention.__class__ = NEW_ATTENTION_CLASSES[case["attn"]]  # release refuses to pick it
with torch.no_grad():
    for p in model.parameters():
        p.add_(torch.randn_like(p) * 0.05)
model.save_pretrained(out)
g = torch.Generator().manual_seed(1)
ids = torch.randint(1, config.vocab_size, (3, case["length"]), generator=g)
mask = torch.ones_like(ids)
mask[1, case["length"] * 2 // 3:] = 0
mask[2, case["length"] // 4:] = 0
tested = type(model.new.encoder.layer[0].attention).__name__
with torch.no_grad():
    o = model(input_ids=ids, attention_mask=mask, output_hidden_states=True)
    other = {"eager": "sdpa", "sdpa": "eager"}[case["attn"]]
    for layer in model.new.encoder.layer:  # new-impl against itself: its other attention kernel
        layer.attention.__class__ = NEW_ATTENTION_CLASSES[other]
    floor = model(input_ids=ids, attention_mask=mask, output_hidden_states=True)
torch.save({"ids": ids, "mask": mask, "logits": o.logits, "hidden": list(o.hidden_states),
            "floor_logits": floor.logits, "floor_hidden": list(floor.hidden_states)}, out + "/reference.pt")
import transformers
print(json.dumps({"transformers": transformers.__version__, "torch": torch.__version__,
                  "attention": tested, "kernel_floor_attention": type(model.new.encoder.layer[0].attention).__name__}))
'''


def code_folder(args, tmp: Path) -> Path:
    """A folder holding ``new_impl/{configuration,modeling}.py``: the given copy, or the hub's at the pin."""
    dest = tmp / "new_impl"
    dest.mkdir()
    (dest / "__init__.py").write_text("")
    for name in CODE_FILES:
        if args.new_impl:
            data = (Path(args.new_impl) / name).read_bytes()
        else:
            from huggingface_hub import hf_hub_download

            from lsrbench.model.gte import NEW_IMPL_CODE_REVISION

            data = Path(hf_hub_download("Alibaba-NLP/new-impl", name, revision=NEW_IMPL_CODE_REVISION)).read_bytes()
        (dest / name).write_bytes(data)
    return tmp


def compare(model, ref) -> dict:
    """Largest |difference| of every hidden state and of the logits on the non-padding tokens, and
    each relative to the reference's largest |value|."""
    import torch

    with torch.no_grad():
        out = model(input_ids=ref["ids"], attention_mask=ref["mask"], output_hidden_states=True)
    keep = ref["mask"].bool()
    pairs = [(f"hidden_{i}", a, b) for i, (a, b) in enumerate(zip(out.hidden_states, ref["hidden"]))]
    pairs.append(("logits", out.logits, ref["logits"]))
    if len(out.hidden_states) != len(ref["hidden"]):
        raise SystemExit(f"{len(out.hidden_states)} hidden states against new-impl's {len(ref['hidden'])}")
    floors = [*ref["floor_hidden"], ref["floor_logits"]]
    rows = {}
    for (name, a, b), f in zip(pairs, floors):
        diff, scale = float((a - b)[keep].abs().max()), float(b[keep].abs().max())
        rows[name] = {"max_abs_diff": diff, "ref_max_abs": scale, "rel": diff / max(scale, 1e-30),
                      "new_impl_kernels_max_abs_diff": float((f - b)[keep].abs().max())}
    return rows


def equal(rows: dict, tolerance: float) -> bool:
    """Every output within ``tolerance`` of new-impl's (relative to its largest |value|), or, where
    float32 rounding grows through a deep random network, no further from it than new-impl's own
    eager and SDPA attention are from each other (times 4)."""
    return all(r["rel"] <= tolerance or r["max_abs_diff"] <= 4 * r["new_impl_kernels_max_abs_diff"]
               for r in rows.values())


def run_case(case: dict, code: Path, tf4_python: str, tmp: Path, tolerance: float) -> dict:
    import torch

    from lsrbench.model.checkpoint import load_mlm

    folder = tmp / case["name"].split(",")[0].replace(" ", "_") / str(abs(hash(case["name"])))
    folder.mkdir(parents=True)
    proc = subprocess.run([tf4_python, "-c", CHILD, str(code), json.dumps(case), str(folder)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"new-impl under transformers 4 failed on {case['name']}:\n{proc.stderr[-3000:]}")
    child = json.loads(proc.stdout.strip().splitlines()[-1])
    ref = torch.load(folder / "reference.pt")
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"t{i}" for i in range(case["config"]["vocab_size"] - 5)]
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n")  # the loader wants a tokenizer file beside
    loaded = load_mlm(str(folder), "benchmark", "checkpoint").eval()
    first = compare(loaded, ref)
    loaded.save_pretrained(folder / "resaved")
    (folder / "resaved" / "vocab.txt").write_text((folder / "vocab.txt").read_text())
    again = compare(load_mlm(str(folder / "resaved"), "benchmark", "checkpoint").eval(), ref)
    worst = max(r["rel"] for r in (*first.values(), *again.values()))
    floor = max(r["new_impl_kernels_max_abs_diff"] / max(r["ref_max_abs"], 1e-30) for r in first.values())
    return {"case": case["name"], "config": case["config"], "tokens": case["length"], "new_impl_under": child,
            "loaded_class": type(loaded).__name__, "rope_parameters": loaded.config.rope_parameters,
            "loaded": first, "after_save_and_reload": again, "worst_relative_difference": worst,
            "new_impl_eager_vs_sdpa_worst_relative": floor,
            "equal_within_tolerance": equal(first, tolerance) and equal(again, tolerance)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tf4-python", required=True, help="a python with transformers 4.x and torch")
    parser.add_argument("--new-impl", help="a folder with new-impl's configuration.py and modeling.py")
    parser.add_argument("--tolerance", type=float, default=1e-5,
                        help="largest |difference| relative to the reference's largest |value| (fp32)")
    parser.add_argument("--quick", action="store_true", help="the tiny cases only")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        code = code_folder(args, Path(tmp))
        digests = {n: hashlib.sha256((code / "new_impl" / n).read_bytes()).hexdigest() for n in CODE_FILES}
        cases = [c for c in CASES if not (args.quick and c.get("real"))]
        results = [run_case(c, code, args.tf4_python, Path(tmp), args.tolerance) for c in cases]
    for r in results:
        print(f"{r['case']:<48} worst relative |diff| {r['worst_relative_difference']:.2e} (new-impl eager vs SDPA: "
              f"{r['new_impl_eager_vs_sdpa_worst_relative']:.2e})  {'equal' if r['equal_within_tolerance'] else 'DIFFERENT'}")
    record = {"command": command_line(), "machine": machine_info(), "new_impl_source": args.new_impl or "hub",
              "new_impl_sha256": digests, "tolerance": args.tolerance, "cases": results,
              "all_equal": all(r["equal_within_tolerance"] for r in results)}
    write_result("gte_equivalence" + ("-quick" if args.quick else ""), record)
    if not record["all_equal"]:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
