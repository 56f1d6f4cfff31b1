"""The prose a person reads stays short (issue 50): docs/ at most 12,000 words (generated pages
included), README.md at most 1,500, benchmark/README.md with its notes at most 6,000; words counted
as ``wc -w`` counts them."""

from __future__ import annotations

import subprocess

import pytest

from helpers.paths import REPO

LIMITS = {"docs": 12_000, "README": 1_500, "benchmark": 6_000}


def pages(name: str) -> list:
    return {"docs": sorted((REPO / "docs").glob("*.md")), "README": [REPO / "README.md"],
            "benchmark": [REPO / "benchmark" / "README.md", *sorted((REPO / "benchmark" / "results" / "notes").glob("*.md"))]}[name]


def words(text: str) -> int:
    return len(text.split())


def test_words_counts_as_wc_does():
    assert words("# A title\n\n`code` and a-b, c.\n| x | y |\n") == 12  # table pipes are words to wc too
    assert words("") == 0 and words(" \n\t ") == 0


def test_the_count_is_wc_s_count():
    files = pages("docs") + pages("README") + pages("benchmark")
    out = subprocess.run(["wc", "-w", *map(str, files)], capture_output=True, text=True, check=True).stdout
    total = int(out.splitlines()[-1].split()[0])
    assert total == sum(words(f.read_text(encoding="utf-8")) for f in files)


@pytest.mark.parametrize("name", LIMITS)
def test_prose_within_its_limit(name):
    counts = {str(p.relative_to(REPO)): words(p.read_text(encoding="utf-8")) for p in pages(name)}
    assert sum(counts.values()) <= LIMITS[name], sorted(counts.items(), key=lambda kv: -kv[1])
