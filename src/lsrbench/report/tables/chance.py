"""``results/chance.json``: per evaluated dataset, what was evaluated (the pooled subset or the full collection,
its documents and queries) and what a random ranking of those documents scores on each measure
(:mod:`lsrbench.evaluate.chance`: exact expectations, not draws)."""

from __future__ import annotations

import json
import math
from pathlib import Path

from lsrbench.evaluate.chance import AT_CHANCE_Z, ChanceLevel, chance_levels

__all__ = ["CHANCE_LABEL", "AT_CHANCE_MARK", "chance_record", "write_chance", "read_chance", "column_chance",
           "at_chance", "pool_text", "chance_note", "at_chance_note"]

CHANCE_LABEL = "Random ranking (expected)"
AT_CHANCE_MARK = "◦"


def _qrels(folder: Path) -> dict[str, dict[str, int]]:
    from lsrbench.data.beir import read_qrels_tsv, written_split

    qrels: dict[str, dict[str, int]] = {}
    for qid, did, rel, _ in read_qrels_tsv(folder / "qrels" / f"{written_split(folder)}.tsv"):
        qrels.setdefault(qid, {})[did] = rel
    return qrels


def _corpus_ids(folder: Path) -> set[str]:
    from lsrbench.data.beir import iter_jsonl

    return {str(record["_id"]) for _, record in iter_jsonl(folder / "corpus.jsonl")}


def chance_record(data_dirs: dict[str, str], infos: dict[str, str], measures: dict[str, list[str]]) -> dict:
    """Per dataset: its evaluated folder's size (``infos``: the dataset's info.json or the pool's
    eval.json) and each measure's chance level over its judged queries."""
    datasets = {}
    for dataset, folder in data_dirs.items():
        info = json.loads(Path(infos[dataset]).read_text(encoding="utf-8"))
        qrels = _qrels(Path(folder))
        ids = _corpus_ids(Path(folder)) if info.get("unknown_doc_qrels") else None
        levels = chance_levels(measures[dataset], int(info["documents"]), qrels, None if ids is None else ids.__contains__)
        datasets[dataset] = {"documents": int(info["documents"]), "full_documents": int(info.get("full_documents",
                                                                                                 info["documents"])),
                             "pool_depth": info.get("pool_depth"), "queries": len(qrels),
                             "measures": {m: None if lvl is None else lvl.as_dict() for m, lvl in levels.items()}}
    return {"at_chance": f"a run's mean is at chance when it is not above the expected mean of a random ranking "
                         f"plus {AT_CHANCE_Z:.3f} standard deviations of that mean over the same queries (one-sided "
                         "95 %, normal approximation)", "datasets": datasets}


def write_chance(out_json: str, record: dict) -> None:
    from lsrbench.atomic import atomic_open

    with atomic_open(out_json, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(record, indent=1, ensure_ascii=False) + "\n")


def read_chance(path: str | None) -> dict | None:
    return None if not path else json.loads(Path(path).read_text(encoding="utf-8"))


def column_chance(record: dict | None, measure: str, datasets: list[str]) -> ChanceLevel | None:
    """A random ranking's macro mean over ``datasets`` (each dataset's mean, averaged), or None
    where one of them has no chance level for ``measure``."""
    levels = [((record or {}).get("datasets", {}).get(d, {}).get("measures") or {}).get(measure) for d in datasets]
    if not levels or any(lvl is None for lvl in levels):
        return None
    return ChanceLevel(math.fsum(lvl["expected"] for lvl in levels) / len(levels),
                       math.sqrt(math.fsum(lvl["sd"] ** 2 for lvl in levels)) / len(levels))


def at_chance(value: float | None, level: ChanceLevel | None) -> bool:
    return value is not None and level is not None and not math.isnan(value) and value <= level.bound


def pool_text(record: dict | None, dataset: str) -> str:
    """What was evaluated on ``dataset``: "a pooled subset (...): 2,732 of 11,429 documents, 93 queries"."""
    d = (record or {}).get("datasets", {}).get(dataset)
    if d is None:
        return dataset
    if d.get("pool_depth"):
        return (f"{dataset}: a pooled subset (every judged document and each query's top-{d['pool_depth']} BM25 "
                f"documents), {d['documents']:,} of {d['full_documents']:,} documents, {d['queries']} queries")
    return f"{dataset}: the full collection, {d['documents']:,} documents, {d['queries']} queries"


def chance_note(record: dict | None, datasets: list[str], measures: list[str], marked: bool = True) -> str:
    """One paragraph: what was evaluated and a random ranking's expected score on it (``marked``:
    the report marks runs at chance with :data:`AT_CHANCE_MARK`; else it names them in notes)."""
    if not record:
        return ""
    parts = []
    for dataset in datasets:
        d = record.get("datasets", {}).get(dataset)
        if d is None:
            continue
        levels = ", ".join(f"{m} {lvl['expected']:.4f}" if lvl else f"{m} –"
                           for m in measures if m in d["measures"] for lvl in [d["measures"][m]])
        parts.append(f"{pool_text(record, dataset)}; a random ranking of them scores {levels}")
    at = f"{AT_CHANCE_MARK}: at chance: " if marked else "A run at chance is named in a note: "
    return (f"Evaluated on {'; '.join(parts)} (expected values, results/chance.json). {at}{record['at_chance']}."
            if parts else "")


def at_chance_note(record: dict | None, runs: list[tuple[str, float]], measure: str, datasets: list[str]) -> list[str]:
    """Notes for the (run text, mean) of a claim that are at chance on ``measure`` over ``datasets``
    (claims.md states the bound once)."""
    level = column_chance(record, measure, datasets)
    return [f"{text} at chance ({measure} {value:.4f})" for text, value in runs if at_chance(value, level)]
