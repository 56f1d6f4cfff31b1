"""Every relative link of the prose a person reads (README.md, docs/*.md, benchmark/README.md)
points to a file that exists, and an anchor (``#...``) to a heading of that file, as GitHub makes
the anchor from the heading. benchmark/README.md is the index of the records: every file under
benchmark/results/ is linked from it (a folder's files through the folder's link)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from helpers.paths import REPO

PAGES = sorted([REPO / "README.md", REPO / "benchmark" / "README.md", *(REPO / "docs").glob("*.md")])
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def _without_code(text: str) -> str:
    """The text outside fenced blocks and inline code (a link written as code is not a link)."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    return re.sub(r"`[^`\n]*`", "", text)


def anchors(page: Path) -> set[str]:
    """GitHub's anchors of a Markdown file's headings: lower case, punctuation dropped, spaces as '-'."""
    seen: dict[str, int] = {}
    out = set()
    for line in re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S).splitlines():
        heading = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not heading:
            continue
        slug = re.sub(r"[^\w\- ]", "", heading.group(1).replace("`", "").lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        out.add(slug if count == 0 else f"{slug}-{count}")
    return out


def links(page: Path) -> list[str]:
    return [t for t in LINK.findall(_without_code(page.read_text(encoding="utf-8")))
            if not re.match(r"[a-z]+:", t)]  # http(s):, mailto: are not files of the repository


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(REPO)) for p in PAGES])
def test_every_relative_link_resolves(page):
    broken = []
    for target in links(page):
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target}: no such file")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{target}: no heading with that anchor in {file.relative_to(REPO)}")
    assert broken == [], f"{page.relative_to(REPO)}: {broken}"


def test_the_checker_sees_a_broken_link_and_anchor(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# A title, with `code`\n[ok](#a-title-with-code) [gone](nowhere.md) [bad](#nope) "
                    "`[code](not-a-link.md)` [web](https://example.org)\n", encoding="utf-8")
    assert anchors(page) == {"a-title-with-code"}
    assert links(page) == ["#a-title-with-code", "nowhere.md", "#nope"]


def test_the_benchmark_index_links_every_record():
    index = REPO / "benchmark" / "README.md"
    linked = {(index.parent / t.partition("#")[0]).resolve() for t in links(index)}
    results = REPO / "benchmark" / "results"
    unlinked = [str(f.relative_to(results)) for f in sorted(results.rglob("*")) if f.is_file()
                and not any(f.resolve() == p or p in f.resolve().parents for p in linked)]
    assert unlinked == [], f"records benchmark/README.md does not link: {unlinked}"
