"""Rendering the report's tables: Markdown tables from frames (missing values as ``–``, numbers right-aligned) and
a self-contained HTML page from a report's Markdown, which Snakemake's HTML report shows inline (it shows
``.md`` and ``.csv`` outputs only as download links)."""

from __future__ import annotations

import html

import numpy as np
import pandas as pd

__all__ = ["MISSING", "markdown_table", "html_page", "report_page", "report_html"]

# What a table shows where there is no value (a measure not computed, auto k not run).
MISSING = "–"

_STYLE = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; font-size: 14px;
       color: #1f2328; margin: 1.2em 1.6em; line-height: 1.45; max-width: 1200px; }
h1 { font-size: 1.45em; border-bottom: 1px solid #d0d7de; padding-bottom: .25em; }
h2 { font-size: 1.2em; margin-top: 1.4em; }
table { border-collapse: collapse; margin: .8em 0 1.2em; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid #d0d7de; padding: 4px 10px; }
th { background: #f6f8fa; }
tbody tr:nth-child(even) { background: #fafbfc; }
code { background: #f6f8fa; padding: 0 .25em; border-radius: 3px; }
"""


def _cell(value, floatfmt: str) -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return MISSING
    if isinstance(value, (float, np.floating)):
        return format(float(value), floatfmt)
    return str(value)


def markdown_table(frame: pd.DataFrame, floatfmt: str = ".3f", right: list[str] | None = None) -> str:
    """``frame`` as a Markdown table: floats formatted with ``floatfmt``, missing values (NaN, None) as
    :data:`MISSING`, numeric columns (and the columns ``right`` names: numbers already written as text)
    right-aligned."""
    numeric = [(pd.api.types.is_numeric_dtype(frame[c]) and not pd.api.types.is_bool_dtype(frame[c]))
               or c in (right or []) for c in frame.columns]
    shown = pd.DataFrame({c: [_cell(v, floatfmt) for v in frame[c]] for c in frame.columns}, columns=frame.columns)
    align = ["right" if n else "left" for n in numeric]
    return shown.to_markdown(index=False, colalign=align, disable_numparse=True)


def html_page(markdown_text: str, title: str) -> str:
    """A standalone HTML page of a report's Markdown (tables included), with its own stylesheet."""
    from markdown_it import MarkdownIt

    body = MarkdownIt("commonmark", {"html": False}).enable("table").render(markdown_text)
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>{html.escape(title)}</title>\n<style>{_STYLE}</style>\n</head>\n<body>\n{body}</body>\n</html>\n")


def report_page(markdown_text: str, fallback_title: str) -> str:
    """The HTML page of a Markdown report (``results/html/<report>.html``), titled by its first
    heading (``fallback_title`` without one)."""
    title = next((line.lstrip("# ").strip() for line in markdown_text.splitlines() if line.startswith("#")),
                 fallback_title)
    return html_page(markdown_text, title)


def report_html(markdown: str, html: str, config_yaml: str | None = None) -> None:
    """The job of an HTML page rule: the page of a Markdown report, titled by its first heading."""
    from pathlib import Path

    from lsrbench.atomic import atomic_open

    with atomic_open(html, "w", encoding="utf-8") as fh:
        fh.write(report_page(Path(markdown).read_text(encoding="utf-8"), Path(markdown).stem))
