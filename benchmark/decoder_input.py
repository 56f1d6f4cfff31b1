"""What shared-mode rescaling does besides dividing the logits: the relative change of the MLM
decoder's input, ``||x_k - x_1|| / ||x_1||`` over real tokens (``lsrbench.model.rescale.
decoder_input_change``), at k = 16 in shared and untie mode, on tiny random models of the five head
families (the real transformers classes, built by tests/helpers/families.py, three seeds each),
side by side. Not a timing. In shared mode a tied head's input embeddings shrink by k: where they
are added to position embeddings before the embedding LayerNorm (BERT, DistilBERT, ALBERT,
RoBERTa) the encoder sees another input; ModernBERT's go straight into a LayerNorm.

    .venv/bin/python benchmark/decoder_input.py            # ~1 min
    .venv/bin/python benchmark/decoder_input.py --quick    # one seed
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from common import command_line, machine_info, write_result  # noqa: E402

K = 16


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    from helpers.families import FAMILIES, model, texts, tokenizer

    from lsrbench.model.rescale import decoder_input_change

    seeds = [0] if args.quick else [0, 1, 2]
    changes: dict[str, dict[str, list[float]]] = {}
    for family in FAMILIES:
        with tempfile.TemporaryDirectory() as tmp:
            tok = tokenizer(Path(tmp), family)
        batch = dict(tok(texts(), padding=True, truncation=True, return_tensors="pt",
                         return_token_type_ids=family in ("bert", "albert")))
        changes[family] = {"shared": [], "untie": []}
        for seed in seeds:
            m = model(family, tok, seed=seed)
            for mode in ("shared", "untie"):
                changes[family][mode].append(decoder_input_change(m, batch, K, mode))
    path = write_result("decoder_input-quick" if args.quick else "decoder_input",
                        {"command": command_line(), "machine": machine_info(), "k": K, "seeds": seeds,
                         "texts": len(texts()), "relative_change": changes})
    print(f"| family | shared, k={K} (seeds {', '.join(map(str, seeds))}) | untie, k={K} |")
    print("| --- | --- | --- |")
    for family, c in changes.items():
        print(f"| {family} | {', '.join(f'{v:.3g}' for v in c['shared'])} | {max(c['untie']):.3g} |")
    print(f"written {path}")


if __name__ == "__main__":
    main()
