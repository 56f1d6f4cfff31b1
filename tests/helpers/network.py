"""A machine without a network, for one child process: every HTTP(S) connection refused at once.

The proxy variables point at a local port that refuses connections (a socket bound and never
listening, held for the block so no other process can take the port), and ir_datasets' and the
Hugging Face hub's homes are empty temporary folders, so nothing is found in a cache. Requests,
httpx (huggingface_hub), urllib and pip all honour the proxy variables. ``IR_DATASETS_DL_TRIES``
and ``PIP_RETRIES`` make them give up after one retry (their defaults retry with back-off).
"""

from __future__ import annotations

import contextlib
import os
import socket
from pathlib import Path

PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


@contextlib.contextmanager
def unreachable_network(tmp: Path):
    """Yield the environment of such a machine (a copy of this one's otherwise)."""
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))  # bound, never listening: connections to it are refused
    port = closed.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "IR_DATASETS_", "PIP_RETRIES"))
           and k.lower() != "no_proxy" and k not in ("TRANSFORMERS_OFFLINE",)}
    env.update({var: f"http://127.0.0.1:{port}" for var in PROXY_VARIABLES})
    env.update(IR_DATASETS_HOME=str(tmp / "ir_datasets-home"), HF_HOME=str(tmp / "hf-home"),
               IR_DATASETS_DL_TRIES="1", PIP_RETRIES="1")
    try:
        yield env
    finally:
        closed.close()
