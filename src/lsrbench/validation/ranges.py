"""Parts of the config check (:mod:`lsrbench.validation.config`) the schema cannot say: a value whose
meaning depends on its type or on another setting (``recipe.warmup_steps``: a float is a ratio of
the steps, an integer a number of steps), and text as a reader sees it (two labels that print
alike name two rows no one can tell apart)."""

from __future__ import annotations

import unicodedata

from lsrbench.errors import InputError

__all__ = ["check_ranges", "as_read"]


def check_ranges(config: dict, file) -> None:
    """The ranges the schema cannot say (:func:`_check_warmup`, :func:`_check_triplets`), on the
    config as written, before the schema makes an integral float an integer."""
    _check_warmup(config, file)
    _check_triplets(config, file)


def _check_triplets(config: dict, file) -> None:
    """``training_data.n_triplets`` fills at least one batch: a batch may not repeat a text (in-batch negatives),
    so fewer triplets than ``recipe.batch_size`` train nothing."""
    data = config.get("training_data") if isinstance(config.get("training_data"), dict) else {}
    recipe = config.get("recipe") if isinstance(config.get("recipe"), dict) else {}
    n, batch, steps = data.get("n_triplets"), recipe.get("batch_size"), recipe.get("steps")
    if all(isinstance(v, int) and not isinstance(v, bool) for v in (n, batch, steps)) and steps > 0 and 0 < n < batch:
        raise InputError(file, "training_data.n_triplets", f"{n} triplets cannot fill one batch of {batch} "
                                                           "(recipe.batch_size) without repeating a text, which "
                                                           f"in-batch negatives forbid: give at least {batch}")


def _check_warmup(config: dict, file) -> None:
    recipe = config.get("recipe") if isinstance(config.get("recipe"), dict) else {}
    warmup, steps = recipe.get("warmup_steps", 0), recipe.get("steps")
    if isinstance(warmup, bool) or not isinstance(warmup, (int, float)) or not isinstance(steps, int):
        return  # not numbers: the schema says so
    if isinstance(warmup, float) and warmup >= 1:
        raise InputError(file, "recipe.warmup_steps", f"{warmup!r}: a ratio of the steps lies below 1 (0.1 warms up "
                                                      "over a tenth of them); a number of steps is an integer "
                                                      f"(transformers would take {int(warmup)} steps)")
    if isinstance(warmup, int) and steps and warmup > steps:
        raise InputError(file, "recipe.warmup_steps", f"{warmup} warm-up steps, more than the {steps} of training "
                                                      "(recipe.steps): the learning rate would never reach its "
                                                      f"value; give at most {steps}, or a ratio below 1")


# Unicode's dashes (category Pd: hyphen, non-breaking hyphen, en and em dashes, minus-like) print
# as one mark in a table cell.
_DASH = "-"


def as_read(text: str) -> str:
    """A label or column name as a reader sees it: compatibility forms folded (NFKC: a full-width
    letter, a non-breaking space), invisible format characters dropped (a zero-width space or
    joiner, a soft hyphen), every dash one dash, and runs of whitespace one space (Markdown and
    HTML collapse them)."""
    folded = unicodedata.normalize("NFKC", text)
    kept = "".join(_DASH if unicodedata.category(c) == "Pd" else c for c in folded
                   if unicodedata.category(c) != "Cf")
    return " ".join(kept.split())
