"""Collapse as a result, not a crash: a non-finite training loss, all-zero vectors or documents activating too
much of the vocabulary mark a run ``collapsed`` with its reasons; it is still evaluated."""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["collapse_status"]


def collapse_status(train_status: str | None, docs, queries, max_active_share: float | None) -> dict:
    """``{"status", "collapsed", "reasons", ...}`` of one evaluated run from its training status and its
    vectors."""
    reasons = []
    info: dict = {}
    if train_status:
        trained = json.loads(Path(train_status).read_text(encoding="utf-8"))
        info["train"] = trained
        if trained.get("status", "ok") != "ok":
            reasons.append(trained.get("reason") or trained["status"].removeprefix("collapsed: "))
            info.update({key: trained.get(key) for key in ("step", "last_finite_loss") if key in trained})
    for name, m in (("document", docs), ("query", queries)):
        if m.shape[0] and m.count_nonzero() == 0:
            reasons.append(f"all-zero {name} vectors")
    if max_active_share is not None and docs.shape[0] and docs.shape[1]:
        share = docs.count_nonzero() / docs.shape[0] / docs.shape[1]
        info["doc_active_share"] = share
        if share > max_active_share:
            reasons.append(f"documents activate {share:.1%} of the vocabulary on average "
                           f"(more than collapse_max_active_share {max_active_share:g})")
    return {"status": "collapsed: " + "; ".join(reasons) if reasons else "ok", "collapsed": bool(reasons),
            "reasons": reasons, **info}
