"""Names derived from config values: k as text and the Snakefile's wildcard patterns (one definition)."""

import re

import pytest

from lsrbench.names import (DATASET_PATTERN, K_PATTERN, MAX_NAME_LENGTH, POOLED, RUN_PATTERN, format_k,
                            k_text_problem, name_problem)


@pytest.mark.parametrize("k", [1, 1.0, 4, 16, 2.5, 0.1, 1e-30, 1.5e-7, 1e20, 3.4e38, "auto"])
def test_every_accepted_k_is_a_text_the_wildcard_matches(k):
    assert k_text_problem(k) is None
    assert re.fullmatch(K_PATTERN, format_k(k))


@pytest.mark.parametrize("k, says", [
    (float("inf"), "not a finite positive number"),
    (float("nan"), "not a finite positive number"),
    (0, "not a finite positive number"),
    (True, "not a finite positive number"),
    (1e300, f"301 characters, more than {MAX_NAME_LENGTH}"),
])
def test_a_k_that_cannot_name_a_run_is_refused(k, says):
    assert says in k_text_problem(k)


def test_name_patterns():
    assert name_problem("splade-tiny") is None and name_problem("a" * MAX_NAME_LENGTH) is None
    assert "101 characters" in name_problem("a" * 101)
    assert name_problem("-x") and name_problem("a b") and name_problem("a/b")
    assert re.fullmatch(RUN_PATTERN, "splade-tiny+untie") and not re.fullmatch(RUN_PATTERN, "splade-tiny+other")
    assert re.fullmatch(DATASET_PATTERN, "vaswani") and not re.fullmatch(DATASET_PATTERN, POOLED)
    assert name_problem(POOLED, DATASET_PATTERN)
