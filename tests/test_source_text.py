"""The code says what a thing is, not when it was asked for: no issue numbers in the sources."""
import re

from helpers.paths import REPO

SOURCES = ["src", "workflow", "config"]


def test_no_issue_numbers_in_the_sources():
    found = []
    for root in SOURCES:
        for path in sorted((REPO / root).rglob("*")):
            if path.is_file() and path.suffix in {".py", ".smk", ".yaml", ".rst"}:
                text = path.read_text(encoding="utf-8")
                found += [f"{path.relative_to(REPO)}: {m.group(0)}" for m in re.finditer(r"(?i)\bissue \d+", text)]
    assert not found, found
