"""GTE-MLM as lsrbench loads it (transformers 5's ``gte``, :mod:`lsrbench.model.gte`) against
new-impl's own code (``Alibaba-NLP/new-impl`` at the pinned commit, the hub checkpoint's remote code,
Apache-2.0) run under transformers 4, on the same random weights, in float64.

For each case a transformers-4 interpreter (``--tf4-python``: a separate virtual environment, e.g.
``python -m venv /tmp/venv-tf4 && /tmp/venv-tf4/bin/pip install transformers==4.49.0`` with torch)
builds new-impl's ``NewForMaskedLM`` from its ``configuration.py`` / ``modeling.py``, draws every
parameter at random (its init plus N(0, 0.05), so LayerNorm gains and biases are random too), saves
the checkpoint as the hub stores it (float32, ``new.*`` names, packed ``qkv_proj`` and
``up_gate_proj``, no separate decoder weight), then runs it in float64 on a padded batch. This
process loads the checkpoint with lsrbench's loader (``load_mlm``), again after ``save_pretrained``,
runs both in float64 and compares every hidden state (embeddings and each layer) and the MLM logits
on the non-padding tokens: equal means every one within ``--tolerance`` (1e-6) of new-impl's,
relative to its largest |value|, with no allowance for rounding. A negative control per case scales
one attention output matrix of the loaded model by 1 + 1e-4 and must come out DIFFERENT.

    nice .venv/bin/python benchmark/gte_equivalence.py --tf4-python /tmp/venv-tf4/bin/python \\
        --new-impl DIR      # results/gte_equivalence.json (--quick: tiny cases only, not recorded)

``DIR`` holds new-impl's two files; without ``--new-impl`` they are downloaded from the hub at the
pinned commit (``lsrbench.model.gte.NEW_IMPL_CODE_REVISION``). Either way a file whose SHA-256 is not
the pinned commit's (:data:`NEW_IMPL_SHA256`) is refused, and a record is written only from a clean
commit (``src`` and ``benchmark`` unchanged), which it names.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import tempfile
from pathlib import Path

from common import command_line, machine_info, write_result  # benchmark/common.py

from lsrbench.model.gte import NEW_IMPL_CODE_REVISION

HERE = Path(__file__).resolve().parent
CODE_FILES = ("configuration.py", "modeling.py")
# SHA-256 of new-impl's files at NEW_IMPL_CODE_REVISION (40ced75), as public projects that pin that
# commit record them (notes: results/notes/gte_equivalence.md).
NEW_IMPL_SHA256 = {"configuration.py": "3411088045ffb8a9a0aa9936eae275896b39983a2ee5b08f091b44e6289e4fe4",
                   "modeling.py": "374670b416fcc82f081c9cd28b5fd61c2bd91bbe18eb4798fcc48a81f9c250a0"}
CONTROL_SCALE = 1e-4  # the negative control's error: one o_proj matrix scaled by 1 + this
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

# Runs under transformers 4: new-impl's code builds, draws random weights, saves them (float32, as
# the hub stores them) and records its float64 outputs.
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
model = model.double()  # the saved float32 weights, exactly, computed in float64
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
    """A folder holding ``new_impl/{configuration,modeling}.py``: the given copy, or the hub's at the
    pin; a file that is not the pinned commit's (its SHA-256) stops the run in one line."""
    dest = tmp / "new_impl"
    dest.mkdir()
    (dest / "__init__.py").write_text("")
    for name in CODE_FILES:
        if args.new_impl:
            data = (Path(args.new_impl) / name).read_bytes()
        else:
            from huggingface_hub import hf_hub_download

            data = Path(hf_hub_download("Alibaba-NLP/new-impl", name, revision=NEW_IMPL_CODE_REVISION)).read_bytes()
        found = hashlib.sha256(data).hexdigest()
        if found != NEW_IMPL_SHA256[name]:
            raise SystemExit(f"gte_equivalence: error: {args.new_impl or 'hub'}/{name}: SHA-256 {found} is not the pinned "
                             f"commit's {NEW_IMPL_SHA256[name]}: give new-impl's file at 40ced75 unchanged")
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
    """Every output within ``tolerance`` of new-impl's, relative to its largest |value| (no allowance
    for rounding: new-impl's own two attention kernels are recorded beside it, not used)."""
    return all(r["rel"] <= tolerance for r in rows.values())


def negative_control(model, ref, tolerance: float) -> dict:
    """The same comparison after scaling the first attention output matrix by 1 + CONTROL_SCALE:
    an error of that size must come out DIFFERENT (else the tolerance could hide it)."""
    import torch

    name, weight = next((n, p) for n, p in model.named_parameters() if "o_proj.weight" in n)
    with torch.no_grad():
        weight.mul_(1 + CONTROL_SCALE)
    rows = compare(model, ref)
    worst = max(r["rel"] for r in rows.values())
    return {"scaled": name, "by": 1 + CONTROL_SCALE, "worst_relative_difference": worst,
            "caught": not equal(rows, tolerance)}


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
    dtype = str(next(loaded.parameters()).dtype)  # float32 as saved; .double() is then exact
    first = compare(loaded.double(), ref)
    loaded.float().save_pretrained(folder / "resaved")
    (folder / "resaved" / "vocab.txt").write_text((folder / "vocab.txt").read_text())
    again = compare(load_mlm(str(folder / "resaved"), "benchmark", "checkpoint").eval().double(), ref)
    control = negative_control(loaded.double(), ref, tolerance)
    worst = max(r["rel"] for r in (*first.values(), *again.values()))
    floor = max(r["new_impl_kernels_max_abs_diff"] / max(r["ref_max_abs"], 1e-30) for r in first.values())
    return {"case": case["name"], "config": case["config"], "tokens": case["length"], "new_impl_under": child,
            "loaded_class": type(loaded).__name__, "loaded_dtype": dtype, "compared_in": "float64",
            "rope_parameters": loaded.config.rope_parameters,
            "loaded": first, "after_save_and_reload": again, "worst_relative_difference": worst,
            "new_impl_eager_vs_sdpa_worst_relative": floor,
            "negative_control": control,
            "equal_within_tolerance": equal(first, tolerance) and equal(again, tolerance) and control["caught"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tf4-python", required=True, help="a python with transformers 4.x and torch")
    parser.add_argument("--new-impl", help="a folder with new-impl's configuration.py and modeling.py at 40ced75")
    parser.add_argument("--tolerance", type=float, default=1e-6,
                        help="largest |difference| relative to the reference's largest |value| (float64)")
    parser.add_argument("--quick", action="store_true", help="the tiny cases only (printed, not recorded)")
    args = parser.parse_args()
    machine = machine_info()  # before the run: the commit it ran at
    with tempfile.TemporaryDirectory() as tmp:
        code = code_folder(args, Path(tmp))
        digests = {n: hashlib.sha256((code / "new_impl" / n).read_bytes()).hexdigest() for n in CODE_FILES}
        cases = [c for c in CASES if not (args.quick and c.get("real"))]
        results = [run_case(c, code, args.tf4_python, Path(tmp), args.tolerance) for c in cases]
    for r in results:
        print(f"{r['case']:<48} worst relative |diff| {r['worst_relative_difference']:.2e}; x(1+1e-4) control "
              f"{r['negative_control']['worst_relative_difference']:.2e}  {'equal' if r['equal_within_tolerance'] else 'DIFFERENT'}")
    record = {"command": command_line(), "machine": machine, "new_impl_source": args.new_impl or "hub",
              "new_impl_revision": NEW_IMPL_CODE_REVISION, "new_impl_sha256": digests, "dtype": "float64",
              "tolerance": args.tolerance, "cases": results, "all_equal": all(r["equal_within_tolerance"] for r in results)}
    if args.quick:
        print("--quick: not recorded")
    elif not machine.get("git") or machine["git"].endswith("+dirty"):
        raise SystemExit(f"gte_equivalence: error: git {machine.get('git')}: a record is made from a clean commit; "
                         "commit src/ and benchmark/ first")
    else:
        write_result("gte_equivalence", record)
    if not record["all_equal"]:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
