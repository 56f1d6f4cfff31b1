"""config/paper.yaml's controls (docs/claims.md, "Scale, tying or vocabulary") through the claims
engine on simulated per-query evidence (lsrbench.report.claims.calibration): with the paper's own
numbers (config/paper_reference.yaml: BERT 0.370 at k = 1, ModernBERT 0.127 -> 0.405) and the
controls as the paper's reading has them (scale, not vocabulary), every tested control says the
paper's reading, `gap_left_after_rescaling` included, and no "changes nothing" claim fails; with the
rival reading (the vocabulary, not the scale) the same claims say otherwise. One draw at the paper's
query counts capped at 300: the differences are many standard errors from 0 (about 0.005 for a
BEIR-13 difference here), so those verdicts do not rest on the draw. Equivalence within the margin
(0.01, two of those standard errors) is another matter: it came out inconclusive here, as measured
(docs/claims.md)."""

from __future__ import annotations

import dataclasses

from helpers.paths import REPO
from lsrbench.report.claims.calibration import PAPER_SHAPED, calibrate, load_config, paper_queries

CONTROLS = ("tying_alone_changes_nothing", "scale_alone_reproduces_failure", "rescaling_recovers_scaled_bert",
            "vocabulary_alone_changes_nothing", "gap_left_after_rescaling")


def _verdicts(scenario) -> dict[str, str]:
    config = load_config(str(REPO / "config/paper.yaml"))
    # the claims' definitions under query noise alone (seed_sd 0): with one seed's declared noise added,
    # these differences are within two seed sds and every control says inconclusive (docs/claims.md)
    config["claims"] = {**config["claims"], "seed_sd": 0.0, "seed_flops_cv": 0.0,
                        "list": [c for c in config["claims"]["list"] if c["id"] in CONTROLS]}
    counts = calibrate(config, scenario, 1, 48, paper_queries(config, 300), resamples=1000)
    return {cid: next(iter(c)) for cid, c in counts.items()}


def test_the_papers_numbers_give_the_papers_reading():
    paper = PAPER_SHAPED["config/paper.yaml"]
    assert paper.mean("bert", "1") == 0.370 and paper.mean("modernbert", "16") == 0.405  # config/paper_reference.yaml
    verdicts = _verdicts(paper)
    assert {cid: verdicts.pop(cid) for cid in ("tying_alone_changes_nothing", "vocabulary_alone_changes_nothing")} == {
        "tying_alone_changes_nothing": "inconclusive", "vocabulary_alone_changes_nothing": "inconclusive"}
    assert verdicts == {"scale_alone_reproduces_failure": "holds", "rescaling_recovers_scaled_bert": "holds",
                        "gap_left_after_rescaling": "holds"}


def test_the_rival_reading_is_told_apart():
    """The vocabulary, not the scale: BERT at ModernBERT's scale scores like BERT at every k, the
    cased vocabulary 0.05 lower at BERT's scale, ModernBERT recovers only to 0.33."""
    paper = PAPER_SHAPED["config/paper.yaml"]
    means = {**paper.means, "bert-at-modernbert-scale": {"*": 0.370}, "bert-cased-at-bert-scale": {"*": 0.320},
             "modernbert": {"1": 0.127, "2": 0.200, "4": 0.300, "8": 0.330, "16": 0.330}}
    verdicts = _verdicts(dataclasses.replace(paper, name="vocabulary", means=means))
    assert verdicts == {"tying_alone_changes_nothing": "inconclusive", "scale_alone_reproduces_failure": "inconclusive",
                        "rescaling_recovers_scaled_bert": "inconclusive", "vocabulary_alone_changes_nothing": "fails",
                        "gap_left_after_rescaling": "fails"}
