"""Strict YAML loading: hostile files (alias bombs, deep nesting, huge numbers, huge files) are
one-line errors, refused in bounded time and memory."""

import time
import tracemalloc

import pytest

from lsrbench.errors import InputError
from lsrbench.pipeline.config import MAX_YAML_BYTES, MAX_YAML_DEPTH, MAX_YAML_VALUES, load_yaml


def _laughs(levels: int) -> str:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


HOSTILE = {
    # 9**10 = 3.5e9 values once expanded, from a 700-byte file
    "billion laughs": (_laughs(10), rf"line \d+: YAML error: more than {MAX_YAML_VALUES} values once aliases"),
    "deep flow nesting": ("x: " + "[" * 100_000 + "]" * 100_000 + "\n",
                          f"line 1: YAML error: nested more than {MAX_YAML_DEPTH} levels deep"),
    "deep block nesting": ("".join("  " * i + f"k{i}:\n" for i in range(200)) + "  " * 200 + "v: 1\n",
                           f"line {MAX_YAML_DEPTH}: YAML error: nested more than {MAX_YAML_DEPTH} levels deep"),
    "a 5000-digit integer": ("seed: " + "9" * 5000 + "\n", "line 1: YAML error: integer not readable"),
    "a list of 300000 values": ("x: [" + ",".join(["1"] * 300_000) + "]\n",
                                f"line 1: YAML error: more than {MAX_YAML_VALUES} values$"),
    "a file over the size limit": ("#" * (MAX_YAML_BYTES + 1) + "\n", r"\d+ bytes, more than a config file may have"),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_hostile_yaml_is_refused_in_bounded_time_and_memory(tmp_path, case):
    import re

    text, says = HOSTILE[case]
    path = tmp_path / "hostile.yaml"
    path.write_text(text)
    tracemalloc.start()
    start = time.perf_counter()
    with pytest.raises(InputError) as err:
        load_yaml(path)
    elapsed = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    message = str(err.value)
    assert re.match(rf"{re.escape(str(path))}: {says}", message) and "\n" not in message, message
    assert elapsed < 20, elapsed  # ~1 s on an idle core (traced by tracemalloc here, which is slower)
    assert peak < 100 * 2**20, peak


def test_aliases_and_nesting_within_the_bounds_load(tmp_path):
    path = tmp_path / "ok.yaml"
    path.write_text(_laughs(4) + "deep: " + "[" * (MAX_YAML_DEPTH - 2) + "1" + "]" * (MAX_YAML_DEPTH - 2) + "\n")
    data = load_yaml(path)
    assert len(data["a3"]) == 9 and data["a3"][0][0][0][0] == "lol"


def test_a_folder_is_not_a_config(tmp_path):
    with pytest.raises(InputError) as err:
        load_yaml(tmp_path)
    assert str(err.value) == f"{tmp_path}: a folder, not a YAML file"
