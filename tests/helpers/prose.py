"""How much of a Python tree is prose: words of comments and docstrings against all its words.

A prose word is a whitespace-separated word of a comment (without its `#`) or of a docstring (the
first statement of a module, class or function); a code word is one name, number or other string
literal. `python tests/helpers/prose.py DIR...` prints the share per directory and in all.
"""
import ast
import io
import sys
import tokenize
from pathlib import Path


def _docstring_starts(tree: ast.AST) -> set[tuple[int, int]]:
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    starts = set()
    for node in ast.walk(tree):
        first = node.body[0] if isinstance(node, kinds) and node.body else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
            starts.add((first.lineno, first.col_offset))
    return starts


def word_counts(path: Path) -> tuple[int, int]:
    """(prose words, code words) of one Python file."""
    text = path.read_text(encoding="utf-8")
    docstrings = _docstring_starts(ast.parse(text))
    prose = code = 0
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.COMMENT:
            prose += len(token.string.lstrip("#").split())
        elif token.type == tokenize.STRING and token.start in docstrings:
            prose += len(ast.literal_eval(token.string).split())
        elif token.type in (tokenize.NAME, tokenize.NUMBER, tokenize.STRING):
            code += 1
    return prose, code


def prose_share(root: Path) -> tuple[int, int]:
    """(prose words, all words) of every .py file under root."""
    prose = code = 0
    for path in sorted(Path(root).rglob("*.py")):
        file_prose, file_code = word_counts(path)
        prose, code = prose + file_prose, code + file_code
    return prose, prose + code


def _report(root: Path) -> None:
    rows = [(str(d.relative_to(root)), *prose_share(d)) for d in sorted(root.iterdir()) if d.is_dir() and d.name != "__pycache__"]
    top = [word_counts(p) for p in sorted(root.glob("*.py"))]
    rows.append(("(top-level .py)", sum(p for p, _ in top), sum(p + c for p, c in top)))
    rows.append(("ALL", *prose_share(root)))
    for name, prose, words in rows:
        print(f"{root.name}/{name:18} {prose:7d} / {words:7d} words  {100 * prose / max(words, 1):5.1f} %")


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        _report(Path(arg))
