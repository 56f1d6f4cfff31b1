"""Markdown tables with missing values, and the HTML pages the report shows."""

from __future__ import annotations

import numpy as np
import pandas as pd

from lsrbench.report.render import html_page, markdown_table


def test_markdown_table_missing_values_and_alignment():
    frame = pd.DataFrame({"name": ["a", "b"], "x": [1.23456, np.nan], "n": [3, 4]})
    assert markdown_table(frame).splitlines() == [
        "| name   |     x |   n |",
        "|:-------|------:|----:|",
        "| a      | 1.235 |   3 |",
        "| b      |     – |   4 |",
    ]


def test_html_page_renders_the_markdown_tables():
    md = "# Title\n\nSome *text*.\n\n| Backbone | k | nDCG@10 |\n|:--|--:|--:|\n| BM25 | - | 0.383 |\n| A <b> | 1 | **0.394** |\n"
    page = html_page(md, "Title & co")
    assert page.startswith("<!DOCTYPE html>") and "<title>Title &amp; co</title>" in page and "<style>" in page
    assert "<h1>Title</h1>" in page and "<em>text</em>" in page
    assert "<th style=\"text-align:left\">Backbone</th>" in page and "<td style=\"text-align:right\">0.383</td>" in page
    assert "<strong>0.394</strong>" in page
    assert "A &lt;b&gt;" in page  # raw HTML in a cell is shown, not interpreted
