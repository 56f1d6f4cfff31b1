"""How big each dataset is, for ``lsrbench plan`` before any download: a finished job's or the mirror's exact
counts, else the published sizes (BEIR Table 1, MS MARCO, NanoBEIR dataset cards, Vaswani) and published mean
lengths."""

from __future__ import annotations

import json
import os
from pathlib import Path

__all__ = ["PUBLISHED_SIZES", "PUBLISHED_MEAN_WORDS", "dataset_size"]

MSMARCO_PASSAGES = 8_841_823

# name in config/datasets.yaml -> (documents, queries)
PUBLISHED_SIZES: dict[str, tuple[int, int]] = {
    "vaswani": (11_429, 93),
    "msmarco-dev": (MSMARCO_PASSAGES, 6_980),
    "trec-dl-2019": (MSMARCO_PASSAGES, 43),
    "trec-covid": (171_332, 50),
    "nfcorpus": (3_633, 323),
    "nq": (2_681_468, 3_452),
    "hotpotqa": (5_233_329, 7_405),
    "fiqa": (57_638, 648),
    "arguana": (8_674, 1_406),
    "webis-touche2020": (382_545, 49),
    "dbpedia-entity": (4_635_922, 400),
    "scidocs": (25_657, 1_000),
    "fever": (5_416_568, 6_666),
    "climate-fever": (5_416_593, 1_535),
    "scifact": (5_183, 300),
    "quora": (522_931, 10_000),
    "NanoClimateFEVER": (3_408, 50),
    "NanoDBPedia": (6_045, 50),
    "NanoFEVER": (4_996, 50),
    "NanoFiQA2018": (4_598, 50),
    "NanoHotpotQA": (5_090, 50),
    "NanoMSMARCO": (5_043, 50),
    "NanoNFCorpus": (2_953, 50),
    "NanoNQ": (5_035, 50),
    "NanoQuoraRetrieval": (5_046, 50),
    "NanoSCIDOCS": (2_210, 50),
    "NanoArguAna": (3_635, 50),
    "NanoSciFact": (2_919, 50),
    "NanoTouche2020": (5_745, 49),
}


# name -> (mean words per query, mean words per document): BEIR Table 1.
_BEIR_MEAN_WORDS = {
    "msmarco": (5.96, 55.98), "trec-covid": (10.60, 160.77), "nfcorpus": (3.30, 232.26), "nq": (9.16, 78.88),
    "hotpotqa": (17.61, 46.30), "fiqa": (10.77, 132.32), "arguana": (192.98, 166.80),
    "webis-touche2020": (6.55, 292.37), "dbpedia-entity": (5.39, 49.68), "scidocs": (9.38, 176.19),
    "fever": (8.13, 84.76), "climate-fever": (20.13, 84.76), "scifact": (12.37, 213.63), "quora": (9.53, 11.44),
}
_NANO_PARENT = {"NanoClimateFEVER": "climate-fever", "NanoDBPedia": "dbpedia-entity", "NanoFEVER": "fever",
                "NanoFiQA2018": "fiqa", "NanoHotpotQA": "hotpotqa", "NanoMSMARCO": "msmarco",
                "NanoNFCorpus": "nfcorpus", "NanoNQ": "nq", "NanoQuoraRetrieval": "quora", "NanoSCIDOCS": "scidocs",
                "NanoArguAna": "arguana", "NanoSciFact": "scifact", "NanoTouche2020": "webis-touche2020"}
PUBLISHED_MEAN_WORDS: dict[str, tuple[float, float]] = {
    **{k: v for k, v in _BEIR_MEAN_WORDS.items() if k != "msmarco"},
    "msmarco-dev": _BEIR_MEAN_WORDS["msmarco"], "trec-dl-2019": _BEIR_MEAN_WORDS["msmarco"],
    **{nano: _BEIR_MEAN_WORDS[parent] for nano, parent in _NANO_PARENT.items()},
}


def dataset_size(name: str, mirror: str | os.PathLike | None = None, info_file: str | os.PathLike | None = None) -> dict:
    """``{"documents", "queries", "evaluated_documents", "source"}`` of ``name`` from a finished job's record,
    the mirror, or :data:`PUBLISHED_SIZES` (None where unknown)."""
    info = Path(info_file) if info_file else None
    if info is not None and info.is_file():
        record = json.loads(info.read_text(encoding="utf-8"))
        return {"documents": record.get("full_documents", record["documents"]), "queries": record["queries"],
                "evaluated_documents": record["documents"], "source": str(info)}
    folder = Path(mirror) / "data" / name if mirror else None
    if folder is not None and (folder / "corpus.jsonl").is_file() and (folder / "queries.jsonl").is_file():
        return {"documents": _lines(folder / "corpus.jsonl"), "queries": _lines(folder / "queries.jsonl"),
                "evaluated_documents": None, "source": str(folder)}
    documents, queries = PUBLISHED_SIZES.get(name, (None, None))
    return {"documents": documents, "queries": queries, "evaluated_documents": None,
            "source": "published" if name in PUBLISHED_SIZES else "unknown"}


def _lines(path: Path) -> int:
    """Lines of a JSONL file, counted in 1 MiB blocks (MS MARCO's corpus is ~3 GB)."""
    count, last = 0, b"\n"
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            count += block.count(b"\n")
            last = block[-1:]
    return count + (last != b"\n")
