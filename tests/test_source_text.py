"""The code says what a thing is, not when it was asked for: no issue numbers in the sources."""
import re

from helpers.paths import REPO
from helpers.prose import prose_share, word_counts

SOURCES = ["src", "workflow", "config"]


def test_no_issue_numbers_in_the_sources():
    found = []
    for root in SOURCES:
        for path in sorted((REPO / root).rglob("*")):
            if path.is_file() and path.suffix in {".py", ".smk", ".yaml", ".rst"}:
                text = path.read_text(encoding="utf-8")
                found += [f"{path.relative_to(REPO)}: {m.group(0)}" for m in re.finditer(r"(?i)\bissue \d+", text)]
    assert not found, found


# The share the issue set for comments and docstrings in src/ (Snakemake 23 %, ir_measures 21 %,
# measured the same way).
MAX_PROSE_SHARE = 0.25


def test_prose_words_are_counted_by_token(tmp_path):
    """Comment words without their '#', docstring words (module, class, function) without quotes; one
    code word per name, number and other string literal."""
    source = tmp_path / "m.py"
    source.write_text('"""A module doc."""\n'
                      "X = 1  # one two\n"
                      "def f(a):\n"
                      "    '''Says what f does.'''\n"
                      "    return a + 'not prose'\n"
                      "class C:\n"
                      '    """"""\n'
                      "    y = f  # three\n", encoding="utf-8")
    # prose: 3 + 2 + 4 + 0 + 1; code: X 1 def f a return a 'not prose' class C y f
    assert word_counts(source) == (10, 12)
    assert prose_share(tmp_path) == (10, 22)


def test_comments_and_docstrings_are_at_most_a_quarter_of_src():
    prose, words = prose_share(REPO / "src" / "lsrbench")
    assert prose / words <= MAX_PROSE_SHARE, f"{prose} of {words} words ({prose / words:.1%}): python tests/helpers/prose.py src/lsrbench"
