"""The index stage's collapse check (lsrbench.index.density): the sample's density against hand-counted
matrices, the band's verdicts on both sides of it, and (slow) through snakemake on a micro config: a head
x1000 (every term active) and an all-empty model stop on their sample in one line, with no docs.npz."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from lsrbench.errors import InputError
from lsrbench.index.density import check_density, density, npz_bytes, sample_rows


def test_sample_rows_spread_over_the_corpus_and_whole_when_smaller():
    assert sample_rows(5, 10).tolist() == [0, 1, 2, 3, 4]
    assert sample_rows(101, 5).tolist() == [0, 25, 50, 75, 100]
    assert len(set(sample_rows(10_000, 999).tolist())) == 999


def test_density_counts_non_zeros_and_empty_rows_by_hand():
    # rows: 3 non-zeros, 0, 1, 0 (an explicit zero is not a term) over 10 terms
    m = sp.csr_matrix(np.array([[1, 2, 3, 0, 0, 0, 0, 0, 0, 0], [0] * 10, [0, 0, 0, 0, 5, 0, 0, 0, 0, 0], [0] * 10],
                               dtype=np.float32))
    m.data[1] = 0.0  # stored zero
    found = density(m)
    assert found == {"documents": 4, "terms": 10, "mean_nonzeros": 0.75, "active_share": 0.075, "empty_share": 0.5}
    m.data[-1] = np.nan  # a NaN weight (a training collapsed to non-finite weights) is zeroed before docs.npz
    assert density(m) == {**found, "mean_nonzeros": 0.5, "active_share": 0.05, "empty_share": 0.75}


def test_npz_bytes_of_a_trained_and_a_collapsed_index():
    # 8 bytes per non-zero (float32 value, int32 term) + 56 per row (int64 pointer, 12-character id)
    assert npz_bytes(1000, 200) == 1000 * (200 * 8 + 56)
    assert npz_bytes(8_841_823, 50_368) / npz_bytes(8_841_823, 200) > 240  # every term of ModernBERT's vocabulary


@pytest.mark.parametrize("found, field", [
    ({"documents": 100, "terms": 600, "mean_nonzeros": 301.0, "active_share": 301 / 600, "empty_share": 0.0},
     "evaluation.index_max_active_share"),
    ({"documents": 100, "terms": 600, "mean_nonzeros": 0.1, "active_share": 0.1 / 600, "empty_share": 0.91},
     "evaluation.index_max_empty_share"),
])
def test_outside_the_band_is_one_line_naming_the_field_and_the_numbers(found, field):
    with pytest.raises(InputError) as err:
        check_density(found, 1_000_000, max_active_share=0.5, max_empty_share=0.9, model_dir="m")
    line = str(err.value)
    assert line.startswith(f"m: {field}: collapsed model") and "\n" not in line
    assert f"sample of 100 of 1,000,000 documents: {found['mean_nonzeros']:.1f} non-zeros" in line
    assert f"{found['empty_share']:.1%} empty" in line and "every term active: 4.9 GB" in line  # 1e6 x (600 x 8 + 56)


def test_inside_the_band_passes_at_its_edges():
    edge = {"documents": 100, "terms": 600, "mean_nonzeros": 300.0, "active_share": 0.5, "empty_share": 0.9}
    check_density(edge, 1000, max_active_share=0.5, max_empty_share=0.9, model_dir="m")
    check_density({**edge, "empty_share": 1.0}, 1000, max_active_share=0.5, max_empty_share=1.0, model_dir="m")


def _splade_with_bias(src, out, bias: float):
    """SPLADE-tiny with its MLM decoder bias set to ``bias`` on every term: +1e4 makes every term of
    every text active (a collapsed model; x1000 on its head alone, untrained, activates 0.64 % of the
    terms: the collapse is what training then does with it), -1e4 none (all vectors empty)."""
    import torch
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    model = AutoModelForMaskedLM.from_pretrained(src)
    with torch.no_grad():
        model.get_output_embeddings().bias.fill_(bias)
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(src).save_pretrained(out)
    return out


@pytest.mark.slow
def test_collapsed_and_empty_models_stop_on_their_sample_through_snakemake(tmp_path, vaswani_slice):
    import yaml

    from helpers.paths import shared_or_skip
    from helpers.snakemake import index_dir, micro_config, run_snakemake

    splade = shared_or_skip("models", "splade-tiny-msmarco")
    models = {"splade": str(splade), "every-term": str(_splade_with_bias(splade, tmp_path / "every-term", 1e4)),
              "empty": str(_splade_with_bias(splade, tmp_path / "empty", -1e4))}
    cfg = micro_config(tmp_path, vaswani_slice, splade, steps=0)
    config = yaml.safe_load(cfg.read_text())
    config.update(k_grid=[1], backbones={name: {"model": path, "label": name} for name, path in models.items()})
    # the schema's band for the density; the emptiness bound tightened from its default (1: never)
    config["evaluation"].pop("index_max_active_share")
    config["evaluation"].update(index_sample_documents=100, index_max_empty_share=0.99)
    cfg.write_text(yaml.safe_dump(config, sort_keys=False))
    work = tmp_path / "work"
    work.mkdir()
    targets = {name: index_dir(Path("."), cfg, name, "1", "slice") for name in models}
    folders = {name: work / t for name, t in targets.items()}
    proc = run_snakemake(*[str(t / "docs.npz") for t in targets.values()], "--cores", "2", "-k",
                         "-d", str(work), "--configfile", str(cfg), check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert (folders["splade"] / "docs.npz").is_file(), out[-3000:]  # a trained SPLADE's sample is inside the band
    for name, field, numbers in (("every-term", "index_max_active_share", "30522.0 non-zeros per document on average "
                                  "(100.00% of 30,522 terms), 0.0% empty"),
                                 ("empty", "index_max_empty_share", "0.0 non-zeros per document on average (0.00% of "
                                  "30,522 terms), 100.0% empty")):
        lines = [line for line in out.splitlines() if line.startswith(f"lsrbench: error: results/runs/{name}/")]
        assert len(lines) == 1, out[-3000:]
        assert f": evaluation.{field}: collapsed model, index stopped before the rest of its corpus: sample of 100 of 650 " \
               in lines[0] and numbers in lines[0], lines[0]
        assert not (folders[name] / "docs.npz").exists() and not (folders[name] / "queries.npz").exists()
