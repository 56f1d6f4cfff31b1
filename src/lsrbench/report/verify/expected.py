"""``lsrbench expected``: a finished results folder against the values the project expects of its config, with a
tolerance per number (docs/expected.md). Each line names its tier: ``exact`` (a recorded seed on a recorded CPU
model, 4 decimals), else the number's basis (the seeds' 95 % prediction interval, the joint check)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import yaml

from lsrbench.errors import InputError
from lsrbench.report.reports.claims import CLAIMS_JSON
from lsrbench.report.reports.collect import METRICS_CSV
from lsrbench.report.reports.table1 import TABLE1_CELLS

__all__ = ["EXPECTED_FOLDER", "Check", "OK", "OK_MEASURED", "FAIL", "UNCHECKED", "load_expected", "find_expected",
           "folder_config", "table1_numbers", "claim_differences", "check_folder", "tolerance_for", "check_lines",
           "summary_line", "counts_text", "number_key", "Tier", "folder_tier", "EXACT"]

EXPECTED_FOLDER = Path("config") / "expected"
OK, OK_MEASURED, FAIL, UNCHECKED = "OK", "OK*", "FAIL", "--"
EXACT = "exact"  # the tier of a number held to a recorded seed's own bits
TIER_WIDTH = len("deterministic")  # the longest tier name: the numbers' labels line up after it


@dataclass
class Check:
    """One number of the folder against its expected value (``status``: OK, FAIL or -- with ``why``)."""

    key: str
    status: str
    expected: float | None = None
    tolerance: float | None = None
    found: float | None = None
    why: str = ""
    text: str = ""  # a check of words (a verdict): shown instead of the numbers
    tier: str = ""  # what it was held to: exact, measured (OK*), or the basis of its tolerance (seeds, ...)


@dataclass(frozen=True)
class Tier:
    """What a folder can be held to: its training ``seeds``; ``cpus``: the CPU models its trained
    runs were made on (none: a GPU made them); ``machine``: that machine, in words."""

    seeds: tuple[str, ...]
    cpus: tuple[str, ...]
    machine: str


def number_key(entry: dict) -> tuple[str, str, str, str]:
    """The identity of a Table 1 number: (backbone, k, column, measure); a claim's: ("claim", id, backbone, "")."""
    if "claim" in entry:
        return ("claim", str(entry["claim"]), str(entry.get("backbone") or ""), "")
    return (str(entry["backbone"]), str(entry["k"]), str(entry["column"]), str(entry["measure"]))


def _label(key: tuple[str, str, str, str]) -> str:
    if key[0] == "claim":
        return f"claim {key[1]}" + (f" [{key[2]}]" if key[2] else "") + ": difference"
    backbone, k, column, measure = key
    shown = column if measure in column or column == measure else f"{column} ({measure})"
    return f"{backbone} k={k}: {shown}"


def load_expected(path: str | Path) -> dict:
    """An expected-values file, checked: one line naming the file and field where it is malformed."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise InputError(path, None, f"cannot read expected values: {exc}".splitlines()[0]) from None
    if not isinstance(data, dict) or not isinstance(data.get("config"), str):
        raise InputError(path, "config", "an expected-values file starts with 'config: <the config file it is for>'")
    for section in ("table1", "claims"):
        for i, entry in enumerate(data.get(section) or []):
            _check_entry(path, f"{section}[{i}]", entry, data.get("bases") or {})
    return data


def _check_entry(path: Path, where: str, entry, bases: dict) -> None:
    needed = ("claim",) if where.startswith("claims") else ("backbone", "k", "column", "measure")
    if not isinstance(entry, dict) or any(key not in entry for key in needed):
        raise InputError(path, where, f"needs {', '.join(needed)}")
    if entry.get("expected") is None:
        if not entry.get("why"):
            raise InputError(path, f"{where}.why", "a number without an expected value says why")
        return
    for field in ("expected", "tolerance"):
        if not isinstance(entry.get(field), (int, float)) or not math.isfinite(entry[field]):
            raise InputError(path, f"{where}.{field}", "not a number")
    if entry["tolerance"] < 0:
        raise InputError(path, f"{where}.tolerance", "negative")
    if entry.get("basis") not in bases:
        raise InputError(path, f"{where}.basis", f"'{entry.get('basis')}' is not one of bases: {', '.join(bases)}")


def folder_config(results: str | Path) -> dict:
    """The config record of the folder's Table 1 (``{"id", "files", "snapshot"}``)."""
    cells = _read_json(Path(results) / TABLE1_CELLS)
    return cells.get("config") or {}


def find_expected(results: str | Path, root: str | Path | None = None) -> Path:
    """The expected-values file of the config the folder was made with (its last config file,
    as table1.cells.json records it), under ``root``/config/expected (root: the checkout)."""
    from lsrbench.config.layers import workflow_dir

    files = folder_config(results).get("files") or []
    folder = Path(root or workflow_dir()) / EXPECTED_FOLDER
    for path in sorted(folder.glob("*.yaml")):
        if files and load_expected(path)["config"] == files[-1]:
            return path
    raise InputError(Path(results) / TABLE1_CELLS, "config.files",
                     f"no expected values for {', '.join(files) or 'an unnamed config'} in {folder}: give --expected FILE")


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(path, None, "not found: is this a finished results folder? (snakemake --cores 2 "
                                     f"results/{path.name.replace('.cells.json', '.md')})") from None
    except (OSError, ValueError) as exc:
        raise InputError(path, None, f"unreadable: {exc}") from None


def table1_numbers(cells: dict) -> dict[tuple, float]:
    """Every number of table1.cells.json by :func:`number_key` (with several seeds, their mean); a
    cell shown as '–' (no value: BM25's FLOPs) has none."""
    out = {}
    for row in cells.get("rows", []):
        for cell in row["cells"]:
            for number in cell.get("numbers", []):
                if "measure" in number and number.get("value") is not None:  # not auto k's ratio of two norms
                    out[(row["backbone"], row["k"], cell["column"], number["measure"])] = number["value"]
    return out


def claim_differences(claims: dict, metrics) -> dict[tuple, tuple[float | None, str]]:
    """Each claim's difference by :func:`number_key` with its verdict: a comparison's ``difference``
    as claims.json records it; for a claim over several backbones (``best_k_above``), one per
    backbone, its two runs' mean scores (:func:`lsrbench.report.results.mean_score`) apart."""
    from lsrbench.report.results import mean_score

    out: dict[tuple, tuple[float | None, str]] = {}
    for claim in claims.get("claims", []):
        verdict = claim.get("verdict", "")
        runs = claim.get("runs") or []
        if claim.get("type") != "best_k_above":
            if claim.get("difference") is not None:
                out[("claim", claim["id"], "", "")] = (float(claim["difference"]), verdict)
            continue
        if len(runs) % 2:
            continue
        for (run_a, k_a), (run_b, k_b) in zip(runs[::2], runs[1::2]):
            a = mean_score(metrics, run_a, str(k_a), claims["measure"], claim["datasets"])
            b = mean_score(metrics, run_b, str(k_b), claims["measure"], claim["datasets"])
            out[("claim", claim["id"], run_a, "")] = (None if a is None or b is None else a - b, verdict)
    return out


def folder_tier(results: str | Path, cells: dict, expected: dict) -> Tier:
    """The folder's training seeds (table1.cells.json's; one seed: its config snapshot's
    ``recipe.seed``, else the expected file's ``config_seed`` where the folder's config is that
    file's) and the machine its trained runs were made on (their provenance records; none: this one)."""
    from lsrbench.provenance import cpu_model
    from lsrbench.report.verify.reproduction import run_record

    seeds = tuple(str(s) for s in cells.get("seeds") or [])
    config = cells.get("config") or {}
    if not seeds:
        snapshot = Path(results) / "configs" / str(config.get("id")) / "config.yaml"
        try:
            seeds = (str(yaml.safe_load(snapshot.read_text(encoding="utf-8"))["recipe"]["seed"]),)
        except (OSError, yaml.YAMLError, KeyError, TypeError):
            same = expected.get("config_id") and config.get("id") == expected["config_id"]
            seeds = (str(expected["config_seed"]),) if same and expected.get("config_seed") else ()
    record = run_record(results)
    if record["gpu"]:
        return Tier(seeds, (), f"{record['cpu'] or 'a CPU'} with GPU {record['gpu']}")
    cpus = [c.strip() for c in (record["cpu"] or "").split(",") if c.strip()]
    machine = ", ".join(cpus) if cpus else f"{cpu_model() or 'an unknown CPU'} (this machine: the folder records none)"
    return Tier(seeds, tuple(cpus or [cpu_model() or ""]), machine)


def check_folder(results: str | Path, expected: dict) -> list[Check]:
    """Every number of ``expected`` against the folder: its Table 1 (table1.cells.json) and claims (claims.json,
    metrics.csv), by tier (:class:`Tier`); the joint check and the claims' recorded verdicts; then the folder's
    numbers the file has no value for."""
    results = Path(results)
    cells = _read_json(results / TABLE1_CELLS)
    found, tier = table1_numbers(cells), folder_tier(results, cells, expected)
    seeds = len(cells.get("seeds") or []) or 1
    claims_path, claims, verdicts = results / CLAIMS_JSON, {}, {}
    if claims_path.is_file():
        from lsrbench.report.results import read_mean_metrics

        raw = _read_json(claims_path)
        claims = claim_differences(raw, read_mean_metrics(str(results / METRICS_CSV)))
        verdicts = {c["id"]: c.get("verdict", "") for c in raw.get("claims", [])}
    entries = [*(expected.get("table1") or []), *(expected.get("claims") or [])]
    checks = [_check_one(e, found, claims, claims_path.is_file(), tolerance_for(e, expected, seeds), tier)
              for e in entries]
    said = _verdict_checks(expected, verdicts, tier)
    checks = [c for c in checks if not _said_by_verdict(c, said)]
    checks += _joint_check(expected, found, seeds, checks) + said
    listed = {number_key(e) for e in entries}
    extra = [key for key in [*found, *claims] if key not in listed]
    checks += [Check(_label(key), UNCHECKED, found=found.get(key, claims.get(key, (None,))[0]),
                     why="no expected value for it (not in the expected-values file)") for key in extra]
    return checks


def _said_by_verdict(check: Check, verdicts: list[Check]) -> bool:
    """A claim without a difference (a correlation, a dominance test) whose verdict is checked: its
    verdict line says why it has no difference, instead of a [--] line of its own."""
    key = check.key.removesuffix(": difference")
    return check.status == UNCHECKED and check.expected is None and check.key.startswith("claim ") and any(
        v.key == f"{key}: verdict" and v.status != UNCHECKED for v in verdicts)


def tolerance_for(entry: dict, expected: dict, seeds: int = 1) -> tuple[float | None, str]:
    """The tolerance of one number, and its basis, for a folder whose numbers are means over
    ``seeds`` training seeds: the file's (one run) for one seed; for a seed-derived number the
    prediction interval of a mean of ``seeds`` new runs, ``quantile * sd * sqrt(1/seeds + 1/n)``
    (``seeds_rule``: n and the quantile the file's tolerances were made with)."""
    if entry.get("expected") is None:
        return None, ""
    rule = expected.get("seeds_rule") or {}
    if seeds > 1 and entry.get("basis") == "seeds" and entry.get("sd") is not None and rule:
        tol = rule["quantile"] * entry["sd"] * math.sqrt(1 / seeds + 1 / rule["n"])
        return tol, f"seeds, for a mean of {seeds} seeds"
    return float(entry["tolerance"]), entry.get("basis", "")


def _recorded(entry: dict, cpu: str, seeds: tuple[str, ...]) -> tuple[float, float] | None:
    """The value a folder of these seeds made on ``cpu`` has (their mean) and the precision it is equal to (4
    decimals, or half a unit of the record's 6th significant digit); None: not recorded."""
    recorded = {str(k): v for k, v in ((entry.get("exact") or {}).get(cpu) or {}).items()}
    if not seeds or any(s not in recorded for s in seeds):
        return None
    value = sum(recorded[s] for s in seeds) / len(seeds)
    sixth = 0.5 * 10 ** (math.floor(math.log10(abs(value))) - 5) if value else 0.0
    return value, max(0.5e-4, sixth)


def _exact_check(label: str, entry: dict, value: float, tier: Tier) -> Check | None:
    which = f"seed {', '.join(tier.seeds)}'s own value"
    for cpu in entry.get("exact") or {}:
        exact = _recorded(entry, cpu, tier.seeds)
        if exact is not None and abs(value - exact[0]) <= exact[1] + 1e-12:
            return Check(label, OK, exact[0], exact[1], float(value), why=f"{which} on {cpu}", tier=EXACT)
    own = [(cpu, _recorded(entry, cpu, tier.seeds)) for cpu in tier.cpus]
    if own and all(exact is not None for _, exact in own):
        cpu, exact = own[0]
        return Check(label, FAIL, exact[0], exact[1], float(value),
                     why=f"{which} on {cpu}, where the folder was made", tier=EXACT)
    return None


def _check_one(entry: dict, found: dict, claims: dict, have_claims: bool, tolerance: tuple, tier: Tier) -> Check:
    key = number_key(entry)
    label = _label(key)
    if key[0] == "claim":
        value, verdict = claims.get(key, (None, ""))
        missing = ("no claims.json in the folder yet (snakemake --cores 2 results/claims.md)" if not have_claims
                   else f"not in claims.json{' (' + verdict + ')' if verdict else ''}")
    else:
        value, missing = found.get(key), "not in this folder's Table 1 yet"
    if entry.get("expected") is None:
        return Check(label, UNCHECKED, found=value, why=entry["why"])
    exp, (tol, basis) = float(entry["expected"]), tolerance
    if value is None:
        why = missing if key not in found and key not in claims else "no value in the folder (the run has none)"
        return Check(label, UNCHECKED, exp, tol, why=why)
    exact = _exact_check(label, entry, value, tier)
    if exact is not None:
        return exact
    status = OK if abs(value - exp) <= tol + 1e-12 else FAIL
    name, _, why = basis.partition(", ")  # the tier is the basis; the rest says how it applies
    if entry.get("exact"):
        why = "; ".join(filter(None, [why, f"made on {tier.machine}: no recorded value of seed "
                                           f"{', '.join(tier.seeds) or '?'} there"]))
    return Check(label, status, exp, tol, float(value), why=why, tier=name)


def _joint_check(expected: dict, found: dict, seeds: int, checks: list[Check]) -> list[Check]:
    """The runs' mean z: exact where every run it reads was held to its bits, else against its interval."""
    joint = expected.get("joint")
    if not joint:
        return []
    entries = {(e["backbone"], str(e["k"])): e for e in expected.get("table1") or []
               if e.get("measure") == joint["measure"] and e.get("sd")}
    label = f"joint: mean z of the {len(joint['runs'])} runs' {joint['measure']} (a shift of every run)"
    z = []
    for run, k in joint["runs"]:
        e = entries.get((run, str(k)))
        value = None if e is None else found.get(number_key(e))
        if value is None:
            return [Check(label, UNCHECKED, why=f"{run} k={k}: not in this folder's Table 1 yet")]
        z.append((value - e["expected"]) / e["sd"])
    mean = sum(z) / len(z)
    by_key = {c.key: c for c in checks}
    runs = [by_key.get(_label(number_key(entries[(run, str(k))]))) for run, k in joint["runs"]]
    if all(c is not None and c.tier == EXACT for c in runs):
        missed = [c.key.split(":")[0] for c in runs if c.status != OK]
        return [Check(label, FAIL if missed else OK, text=f"z {mean:+.4f}, " + (
            f"from runs not at their recorded bits: {', '.join(missed)}" if missed
            else f"every run's {joint['measure']} exact above ({runs[0].why})"), tier=EXACT)]
    tol, rule = float(joint["tolerance"]), expected.get("seeds_rule") or {}
    if seeds > 1 and rule:
        tol = rule["quantile"] * joint["sd"] * math.sqrt(1 / seeds + 1 / rule["n"])
    return [Check(label, OK if abs(mean) <= tol + 1e-12 else FAIL, 0.0, tol, mean, tier="seeds")]


def _verdict_checks(expected: dict, verdicts: dict, tier: Tier) -> list[Check]:
    if not verdicts:
        return []
    out = []
    for e in expected.get("claims") or []:
        if not e.get("verdict") or e["claim"] not in verdicts:
            continue
        label = f"claim {e['claim']}: verdict"
        if tier.seeds != (str(expected.get("config_seed")),):
            out.append(Check(label, UNCHECKED, why=f"recorded for seed {expected.get('config_seed')} only"))
            continue
        got, why = verdicts[e["claim"]], f"seed {expected.get('config_seed')}'s recorded verdict"
        why += f"; no difference: {e['why']}" if e.get("expected") is None and e.get("why") else ""
        out.append(Check(label, OK if got == e["verdict"] else FAIL, text=f"expected {e['verdict']}, found {got} "
                         f"({why})", tier=EXACT))
    return list({c.key: c for c in out}.values())  # a claim over several backbones: one line


def _num(value: float | None, digits: int = 4) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def check_lines(checks: list[Check]) -> list[str]:
    """One line per number: ``[OK]``/``[FAIL]``, the tier it was held to, expected ± tolerance and
    found; ``[--]`` with why."""
    lines = []
    for c in checks:
        head = f"[{c.status}]{' ' * (5 - len(c.status))}{c.tier:<{TIER_WIDTH}} {c.key}: "
        if c.text:
            lines.append(head + c.text)
        elif c.status == UNCHECKED:
            lines.append(f"[--]   {c.key}: not checked: {c.why}" + (f" (found {_num(c.found)})" if c.found is not None else ""))
        else:
            difference = f"{round(c.found - c.expected, 4) + 0.0:+.4f}"
            lines.append(head + f"expected {_num(c.expected)} ± {_num(c.tolerance)}, found {_num(c.found)} "
                                f"({'; '.join(filter(None, [difference, c.why]))})")
    return lines


def counts_text(checks: list[Check]) -> str:
    """``49 OK (exact: 49), 0 FAIL, 0 not checked``: the counts, with the tiers the OKs were held to (exact first)."""
    counts = {s: sum(c.status == s for c in checks) for s in (OK, OK_MEASURED, FAIL, UNCHECKED)}
    tiers = {}
    for c in checks:
        if c.status == OK:
            tiers[c.tier] = tiers.get(c.tier, 0) + 1
    held = ", ".join(f"{t}: {n}" for t, n in sorted(tiers.items(), key=lambda item: item[0] != EXACT))
    return (f"{counts[OK]} OK" + (f" ({held})" if held else "")
            + (f", {counts[OK_MEASURED]} OK*" if counts[OK_MEASURED] else "")
            + f", {counts[FAIL]} FAIL, {counts[UNCHECKED]} not checked")


def summary_line(checks: list[Check], results, expected_file) -> str:
    return f"{results} against {expected_file}: {counts_text(checks)}"
