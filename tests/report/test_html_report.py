"""The HTML report of a finished run, opened in a real headless Chromium as a reader opens it
(``pytest -m slow``): the landing page shows the run's config and grid, where its models and data
were read from (as the jobs recorded it, not the report command's mirror: issue 23.5) and links
every result with its caption (issue 23.9); Table 1 and the other Markdown reports are shown as
tables (not download links), listed under their titles, the figures as images.

Chromium is Debian's ``chromium`` (``.ci/run`` installs it); without it the test skips, or fails
with ``LSRBENCH_REQUIRE_CHROMIUM=1`` (CI)."""

from __future__ import annotations

import json
import os

import pytest
import yaml

from helpers.chromium import Browser, chromium_binary
from helpers.snakemake import copy_run, run_snakemake
from lsrbench.report.landing import result_label

pytestmark = pytest.mark.slow


def _markdown_rows(path) -> list[list[str]]:
    """The cells of the first pipe table of a Markdown file, as a browser shows them (no **)."""
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.startswith("|")]
    return [[c.strip().replace("**", "") for c in line.strip("|").split("|")] for i, line in enumerate(lines) if i != 1]


@pytest.fixture(scope="module")
def browser():
    binary = chromium_binary()
    if binary is None:
        if os.environ.get("LSRBENCH_REQUIRE_CHROMIUM") == "1":
            pytest.fail("chromium not found (LSRBENCH_REQUIRE_CHROMIUM=1)")
        pytest.skip("chromium not found (apt-get install chromium)")
    with Browser(binary) as b:
        yield b


@pytest.fixture(scope="module")
def report(micro_run, tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("report")
    work = copy_run(micro_run, tmp / "work")
    # made with a mirror the run was not made with (it holds nothing): the page must not say the
    # models and data came from it
    mirror = tmp / "a-mirror"
    for sub in ("models", "data"):
        (mirror / sub).mkdir(parents=True)
    run_snakemake("--cores", "1", "-d", str(work), "--report", str(work / "results" / "report.html"),
                  "--configfile", str(micro_run["config"]), "--config", f"mirror={mirror}")
    return {"work": work, "html": work / "results" / "report.html", "config": micro_run["config"], "mirror": mirror}


def _show(browser, category: str, file: str) -> int:
    """Open a results category, click the eye of one file (listed under its title); the execution
    context of its frame."""
    title = json.dumps(result_label(file))
    browser.click_text(category)
    browser.wait_for(f"[...document.querySelectorAll('td')].some(td => td.innerText.trim() === {title})")
    browser.evaluate(f"""[...document.querySelectorAll('tr')]
        .find(tr => tr.cells[0] && tr.cells[0].innerText.trim() === {title})
        .querySelector('a[iconname=eye]').click()""")
    return browser.frame_context()


def _table(browser, context: int, index: int = 0) -> list[list[str]]:
    return browser.evaluate(f"""[...document.querySelectorAll('table')[{index}].rows]
        .map(r => [...r.cells].map(c => c.innerText.trim()))""", context)


def test_landing_page_shows_the_runs_config(browser, report):
    browser.open(report["html"])
    text = browser.wait_for("document.body && document.body.innerText.includes('Runs (backbone') && document.body.innerText")
    assert str(report["config"]) in text  # the config file it ran with, not the dataset registry
    assert "rand-roberta  shared  k = 1, 1e-30" in text
    assert "3 steps of 4 triplets" in text and "Evaluation: slice; nDCG@10, RR@10, R@100; full collections" in text
    config = yaml.safe_load(report["config"].read_text())
    datasets = yaml.safe_load(open(config["datasets_file"]))
    assert f"rand-roberta: from the folder {config['backbones']['rand-roberta']['model']}" in text
    assert f"slice: from the folder {datasets['slice']['path']}" in text
    assert str(report["mirror"]) not in text and "through their real sources" not in text
    # the results, linked directly with their captions (no claims in the micro config: no claims link)
    assert "Table 1: The paper's Table 1 shape: one row per (backbone, k)" in text
    assert "Effectiveness against FLOPs: Effectiveness against FLOPs per query-document pair" in text
    assert "Claims of the paper" not in text


def test_the_first_screen_shows_the_title(browser, report):
    """Before: Snakemake's report centres the landing page vertically in its scroll box, so a page
    taller than the window (1400 x 1000 here) began above the box's top: its title and introduction
    could not be scrolled to. Now the first screen starts with the title."""
    browser.open(report["html"])
    browser.wait_for("document.querySelector('h1.title') !== null")
    top, bottom, window, scroll, box = browser.evaluate("""(() => {
        const title = document.querySelector('h1.title'), box = title.closest('.overflow-auto');
        const r = title.getBoundingClientRect();
        return [r.top, r.bottom, window.innerHeight, box.scrollHeight, box.clientHeight];
    })()""")
    assert scroll > box  # taller than the window: the case that hid the title
    assert 0 <= top < bottom <= window


def test_the_landing_page_says_what_was_run_before_any_result(browser, report):
    """The title and first lines state what was run, read from the config (the micro run: 3-step runs, one
    seed, full collections, no synthetic twin), before the results; the headline figure is on the page."""
    from lsrbench.cli_options import load_config
    from lsrbench.report.landing import what_was_run

    expected = what_was_run(load_config([str(report["config"])], check_files=False)[0])
    assert expected["title"] == ("lsrbench: rescaling the MLM head for SPLADE (3-step runs, one training seed, "
                                 "full-collection evaluation)")
    browser.open(report["html"])
    browser.wait_for("document.querySelector('h1.title') !== null")
    assert browser.evaluate("document.querySelector('h1.title').innerText.trim()") == expected["title"]
    text = browser.evaluate("document.querySelector('h1.title').closest('.overflow-auto').innerText")
    first = text.index(expected["lines"][0])
    assert first < text.index("One training seed (") < text.index("Results (each opens here")
    assert "Evaluated on the full collections of slice." in text and "synthetic twin" not in text
    # the headline figure: the PNG embedded in the page (the report is one file), drawn as wide as the text
    img = "document.querySelector('img[alt^=\"the headline figure\"]')"
    browser.wait_for(f"{img} !== null && {img}.complete && {img}.naturalWidth > 0")
    width, column, natural, src = browser.evaluate(f"[{img}.getBoundingClientRect().width, "
                                                   f"{img}.parentElement.getBoundingClientRect().width, {img}.naturalWidth, {img}.src]")
    assert src.startswith("data:image/png;base64,") and natural > 1000 and width == column > 400
    assert "Claims_" not in text  # no claims in the micro config: no link to them, and no broken one
    assert text.index("What was run") < text.index("Results (each opens here")


def test_the_landing_pages_link_opens_table1(browser, report):
    browser.open(report["html"])
    browser.wait_for("document.body && document.body.innerText.includes('Runs (backbone')")
    browser.click_text("Table 1")
    context = browser.frame_context()
    assert _table(browser, context) == _markdown_rows(report["work"] / "results" / "table1.md")


def test_table1_is_a_table_in_the_report(browser, report, tmp_path):
    browser.open(report["html"])
    browser.wait_for("document.querySelector('nav') !== null")
    context = _show(browser, "Tables", "results/html/table1.html")
    shown = _table(browser, context)
    expected = _markdown_rows(report["work"] / "results" / "table1.md")
    assert shown == expected  # every cell of table1.md, as rendered in the browser
    assert shown[0] == ["Backbone", "k", "Slice nDCG@10", "FLOPs", "q / d dims"]
    rows = {row[1]: row for row in shown[1:]}
    assert [row[0] for row in shown[1:]] == ["BM25 (Anserini, k1=0.9, b=0.4)", "Random ranking (expected)",
                                             "random RoBERTa 1L", "random RoBERTa 1L"]
    assert set(rows) == {"-", "1e-30", "1"} and rows["1e-30"][2] == "collapsed"
    bold = browser.evaluate("[...document.querySelectorAll('td strong')].map(s => s.innerText)", context)
    assert bold == [rows["1"][2].removesuffix(" ◦")]  # (◦: at chance, outside the bold) the best (here: the only non-collapsed) k of the backbone
    shot = browser.screenshot(tmp_path / "table1.png")
    from matplotlib.image import imread

    pixels = imread(shot)
    assert pixels.shape[0] >= 600 and pixels.shape[1] >= 1000
    assert (pixels[..., :3].mean(axis=2) < 0.5).mean() > 0.01  # text was drawn, not a blank page


@pytest.mark.parametrize("category, file, markdown, tables", [
    ("Tables", "results/html/table_beir.html", "table_beir.md", 1),
    ("Head norms", "results/html/norms.html", "norms.md", 1),
])
def test_other_markdown_reports_are_tables(browser, report, category, file, markdown, tables):
    browser.open(report["html"])
    browser.wait_for("document.querySelector('nav') !== null")
    context = _show(browser, category, file)
    assert browser.evaluate("document.querySelectorAll('table').length", context) == tables
    assert _table(browser, context) == _markdown_rows(report["work"] / "results" / markdown)


def test_figures_are_images(browser, report):
    browser.open(report["html"])
    browser.wait_for("document.querySelector('nav') !== null")
    browser.click_text("Figures")
    title = json.dumps(result_label("results/tradeoff.png"))
    browser.wait_for(f"[...document.querySelectorAll('td')].some(td => td.innerText.trim() === {title})")
    browser.evaluate(f"""[...document.querySelectorAll('tr')]
        .find(tr => tr.cells[0] && tr.cells[0].innerText.trim() === {title})
        .querySelector('a[iconname=eye]').click()""")
    size = browser.wait_for("""(() => { const img = [...document.querySelectorAll('img')]
        .find(i => i.src.startsWith('data:image/png') && i.naturalWidth > 500);
        return img ? [img.naturalWidth, img.naturalHeight] : null; })()""")
    assert size[0] > 900 and size[1] > 600
