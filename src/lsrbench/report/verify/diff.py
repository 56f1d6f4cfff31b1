"""How ``lsrbench verify`` names what differs between a report as it is and as recomputed from its run files
(:mod:`lsrbench.report.verify.reports`): a Markdown report line by line (a table row cell by cell, named by its
row and column), a JSON record value by value (list items named by what identifies them: a claim's id, a run and
k, a backbone). Written here because a report's reader needs the cell or claim at fault, which a plain text diff
does not name."""

from __future__ import annotations

import difflib
import json
import math
from pathlib import Path

__all__ = ["LIMIT", "text_differences", "value_differences", "report_differences"]

# At most this many differences named per report (then how many more).
LIMIT = 8


def _cells(line: str) -> list[str] | None:
    body = line.strip()
    if not body.startswith("|"):
        return None
    body = body[1:-1] if body.endswith("|") and len(body) > 1 else body[1:]
    return [c.strip() for c in body.split("|")]


def _header_of(lines: list[str], i: int) -> list[str] | None:
    start = i
    while start > 0 and lines[start - 1].lstrip().startswith("|"):
        start -= 1
    return _cells(lines[start]) if start < i else None


def _clip(text: str, width: int = 160) -> str:
    return text if len(text) <= width else text[:width - 1] + "…"


def text_differences(shown: str, fresh: str) -> list[tuple[str, str, str]]:
    """What differs between a Markdown report as it is and as recomputed: ``(where, shown, recomputed)``
    per line, or per cell of a table row (``line N: row R, column C``)."""
    a, b = shown.splitlines(), fresh.splitlines()
    out = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        if tag == "replace" and i2 - i1 == j2 - j1:
            out += [d for i, j in zip(range(i1, i2), range(j1, j2)) for d in _line_differences(a, i, b[j])]
        else:
            where = f"line {i1 + 1}" + (f"-{i2}" if i2 - i1 > 1 else "") if i1 < i2 else f"after line {i1}"
            out.append((where, _quoted(" / ".join(a[i1:i2])), _quoted(" / ".join(b[j1:j2]))))
    return out


NOTHING = "(nothing)"


def _quoted(text: str) -> str:
    return repr(_clip(text)) if text else NOTHING


def _json(value) -> str:
    return _clip(json.dumps(value, ensure_ascii=False))


def _line_differences(lines: list[str], i: int, fresh: str) -> list[tuple[str, str, str]]:
    old, new, header = _cells(lines[i]), _cells(fresh), _header_of(lines, i)
    if old and new and header and len(old) == len(new) == len(header):
        row = old[0] + (f", k {old[1]}" if header[1] == "k" else "")  # Backbone and k name a row of every table
        return [(f"line {i + 1}: row {row}, column {h}", _quoted(o), _quoted(n))
                for h, o, n in zip(header, old, new) if o != n]
    return [(f"line {i + 1}", *_around_difference(lines[i], fresh))]


def _around_difference(shown: str, fresh: str, before: int = 40) -> tuple[str, str]:
    start = next((n for n, (x, y) in enumerate(zip(shown, fresh)) if x != y), min(len(shown), len(fresh)))
    start = max(0, start - before) if max(len(shown), len(fresh)) > 160 else 0
    mark = "…" if start else ""
    return _quoted(mark + shown[start:]), _quoted(mark + fresh[start:])


def _same(a, b) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def _item_name(item) -> str | None:
    if not isinstance(item, dict):
        return None
    if "id" in item:
        return f"[{item['id']}]"
    run = item.get("run", item.get("backbone"))
    if run is not None:
        return f"[{run}{' k ' + str(item['k']) if 'k' in item else ''}]"
    return None


def value_differences(shown, fresh, where: str = "") -> list[tuple[str, str, str]]:
    """What differs between two JSON values: ``(where, shown, recomputed)`` per value, list items
    named by what identifies them (``claims[c1].verdict``, ``points[run k 1].score``)."""
    if isinstance(shown, dict) and isinstance(fresh, dict):
        return [d for key in list(dict.fromkeys([*shown, *fresh]))
                for d in value_differences(shown.get(key), fresh.get(key), f"{where}.{key}" if where else str(key))]
    if isinstance(shown, list) and isinstance(fresh, list):
        names = [_item_name(x) for x in shown], [_item_name(x) for x in fresh]
        if all(names[0]) and all(names[1]) and len(set(names[0])) == len(shown):
            by_name = dict(zip(names[1], fresh))
            out = [d for name, item in zip(names[0], shown) for d in
                   (value_differences(item, by_name[name], where + name) if name in by_name else
                    [(where + name, _json(item), NOTHING)])]
            return out + [(where + name, NOTHING, _json(item)) for name, item in zip(names[1], fresh)
                          if name not in set(names[0])]
        if len(shown) == len(fresh):
            return [d for i, (x, y) in enumerate(zip(shown, fresh)) for d in value_differences(x, y, f"{where}[{i}]")]
    return [] if _same(shown, fresh) else [(where, _json(shown), _json(fresh))]


def report_differences(path: Path, differences: list[tuple[str, str, str]], origin: str, problems: list[str]) -> None:
    """One problem per difference (at most :data:`LIMIT`, then how many more), each naming ``path``,
    the place, and what the recomputation was made from."""
    for where, shown, fresh in differences[:LIMIT]:
        problems.append(f"{path}: {where}: {shown} does not follow from {origin}: recomputed {fresh}")
    if len(differences) > LIMIT:
        problems.append(f"{path}: {len(differences) - LIMIT} more differences from what {origin} give")
