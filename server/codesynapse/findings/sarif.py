"""SARIF 2.1.0 → finding nodes: streamed, validated, attached to symbols, then stored whole.

``read_sarif`` walks the file with ijson's event parser: only one result object is built
at a time (and each run's ``tool``, ``invocations`` and ``originalUriBaseIds``), so a 50 MB
log is read in bounded memory; what is kept per result is a small tuple. Anything that is
not SARIF (bad JSON, a wrong type where the schema fixes one) raises ``SarifError`` naming
the file and the JSON path; nothing is stored then.

``import_sarif`` attaches each result to its file (a workspace path) and to the innermost
symbol whose range holds its start line, records the hash of the file as the scan saw it
(empty when the file changed after the scan: the finding is stale from the start), and
replaces every earlier finding of the same tool in one store write. A finding is stale when
its file's indexed hash is no longer the one recorded (context/deps.py).
"""

from __future__ import annotations

import datetime as dt
import logging
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from codesynapse.errors import CodeSynapseError
from codesynapse.graph.depmodel import LEVELS, FindingRow, FindingRun

log = logging.getLogger(__name__)

MAX_MESSAGE = 300  # characters of a finding's one-line message
_SKIP_KINDS = frozenset({"pass", "notApplicable"})  # results that are not problems


class SarifError(CodeSynapseError):
    def __init__(self, file: str, path: str, message: str):
        self.file, self.path = file, path
        super().__init__(f"{file}: {path}: {message}")


class _Run:
    __slots__ = ("index", "tool", "invocations", "bases", "results", "suppressed", "skipped")

    def __init__(self, index: int):
        self.index = index
        self.tool: Any = None
        self.invocations: Any = None
        self.bases: Any = None
        # (rule_id, rule_index, level, message, uri, uri_base, start_line, start_col, end_line, end_col, severity)
        self.results: list[tuple] = []
        self.suppressed = 0
        self.skipped = 0


class ParsedRun:
    def __init__(self, tool: str, results: list[tuple], scanned_at: float | None, bases: dict[str, str],
                 suppressed: int, skipped: int):
        self.tool, self.results, self.scanned_at, self.bases = tool, results, scanned_at, bases
        self.suppressed, self.skipped = suppressed, skipped


def _jpath(prefix: str, run: int, result: int) -> str:
    """ijson's prefix (``runs.item.results.item.x``) as a JSON path with the indices known."""
    out = "$"
    seen_items = 0
    for part in prefix.split(".") if prefix else []:
        if part == "item":
            idx = run if seen_items == 0 else result if seen_items == 1 else None
            out += f"[{idx}]" if idx is not None and idx >= 0 else "[]"
            seen_items += 1
        else:
            out += "." + part
    return out


def _kind(v: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null",
            int: "a number", float: "a number"}.get(type(v), type(v).__name__)


def read_sarif(path: str | Path, display: str | None = None) -> list[ParsedRun]:
    """Parse and validate a SARIF 2.1.0 log (streamed). Raises SarifError."""
    import ijson
    from ijson.common import ObjectBuilder

    name = display or str(path)
    runs: list[ParsedRun] = []
    run: _Run | None = None
    run_i = -1
    res_j = -1
    version = None
    saw_runs = False
    builder: ObjectBuilder | None = None
    bprefix = ""
    last_prefix = ""

    def fail(where: str, msg: str) -> SarifError:
        return SarifError(name, where, msg)

    try:
        f = open(path, "rb")
    except OSError as e:
        raise SarifError(name, "$", f"cannot be read ({e.strerror or e})") from e
    with f:
        try:
            for prefix, event, value in ijson.parse(f, use_float=True):
                # a syntax error after a key is in that key's value
                last_prefix = f"{prefix}.{value}" if event == "map_key" and prefix else \
                    str(value) if event == "map_key" else prefix
                if builder is not None:
                    builder.event(event, value)
                    if prefix == bprefix and event in ("end_map", "end_array"):
                        obj = builder.value
                        builder = None
                        assert run is not None
                        if bprefix == "runs.item.results.item":
                            _take_result(obj, run, res_j, fail)
                        else:
                            setattr(run, {"runs.item.tool": "tool", "runs.item.invocations": "invocations",
                                          "runs.item.originalUriBaseIds": "bases"}[bprefix], obj)
                    continue
                if prefix == "":
                    if event not in ("start_map", "end_map", "map_key"):
                        raise fail("$", f"expected an object (a SARIF log), found {event.replace('start_', '')}")
                elif prefix == "version":
                    version = value
                elif prefix == "runs":
                    if event == "start_array":
                        saw_runs = True
                    elif event != "end_array":
                        raise fail("$.runs", f"expected an array, found {_kind(value)}")
                elif prefix == "runs.item":
                    if event == "start_map":
                        run_i += 1
                        res_j = -1
                        run = _Run(run_i)
                    elif event == "map_key":
                        pass
                    elif event == "end_map":
                        assert run is not None
                        runs.append(_finish_run(run, fail))
                        run = None
                    else:
                        raise fail(f"$.runs[{run_i + 1}]", f"expected an object, found {_kind(value)}")
                elif prefix in ("runs.item.tool", "runs.item.invocations", "runs.item.originalUriBaseIds"):
                    if event in ("start_map", "start_array"):
                        builder = ObjectBuilder()
                        builder.event(event, value)
                        bprefix = prefix
                    else:
                        raise fail(_jpath(prefix, run_i, res_j), f"expected an object or array, found {_kind(value)}")
                elif prefix == "runs.item.results":
                    if event not in ("start_array", "end_array", "null"):
                        raise fail(f"$.runs[{run_i}].results", f"expected an array, found {_kind(value)}")
                elif prefix == "runs.item.results.item":
                    if event == "start_map":
                        res_j += 1
                        builder = ObjectBuilder()
                        builder.event(event, value)
                        bprefix = prefix
                    else:
                        raise fail(f"$.runs[{run_i}].results[{res_j + 1}]", f"expected an object, found {_kind(value)}")
        except SarifError:
            raise
        except ijson.JSONError as e:
            where = _jpath(last_prefix, run_i, res_j)
            raise SarifError(name, where, f"not valid JSON ({' '.join(str(e).split())[:160]})") from None
        except (UnicodeDecodeError, ValueError) as e:
            raise SarifError(name, _jpath(last_prefix, run_i, res_j), f"not valid JSON ({e})") from None
    if version != "2.1.0":
        raise fail("$.version", f"expected \"2.1.0\", found {version!r}" if version is not None else "missing")
    if not saw_runs:
        raise fail("$.runs", "missing")
    return runs


def _take_result(obj: Any, run: _Run, j: int, fail) -> None:
    here = f"$.runs[{run.index}].results[{j}]"
    if not isinstance(obj, dict):
        raise fail(here, f"expected an object, found {_kind(obj)}")
    kind = obj.get("kind", "fail")
    if kind in _SKIP_KINDS:
        run.skipped += 1
        return
    sup = obj.get("suppressions")
    if sup is not None:
        if not isinstance(sup, list):
            raise fail(here + ".suppressions", f"expected an array, found {_kind(sup)}")
        if any(isinstance(s, dict) and s.get("status", "accepted") == "accepted" for s in sup):
            run.suppressed += 1
            return
    rule_id = obj.get("ruleId", "")
    if not isinstance(rule_id, str):
        raise fail(here + ".ruleId", f"expected a string, found {_kind(rule_id)}")
    rule = obj.get("rule")
    rule_index = obj.get("ruleIndex", -1)
    if isinstance(rule, dict):
        rule_id = rule_id or (rule.get("id") if isinstance(rule.get("id"), str) else "")
        if isinstance(rule.get("index"), int):
            rule_index = rule["index"]
    if not isinstance(rule_index, int) or isinstance(rule_index, bool):
        raise fail(here + ".ruleIndex", f"expected an integer, found {_kind(rule_index)}")
    level = obj.get("level", "")
    if level and level not in LEVELS:
        raise fail(here + ".level", f"{level!r} is not a SARIF level ({', '.join(LEVELS)})")
    msg = obj.get("message")
    if not isinstance(msg, dict):
        raise fail(here + ".message", "missing" if msg is None else f"expected an object, found {_kind(msg)}")
    text = msg.get("text", msg.get("markdown", msg.get("id", "")))
    if not isinstance(text, str):
        raise fail(here + ".message.text", f"expected a string, found {_kind(text)}")
    uri = base = ""
    sl = sc = el = ec = 0
    locs = obj.get("locations")
    if locs is not None:
        if not isinstance(locs, list):
            raise fail(here + ".locations", f"expected an array, found {_kind(locs)}")
        for k, loc in enumerate(locs[:1]):
            lp = f"{here}.locations[{k}]"
            if not isinstance(loc, dict):
                raise fail(lp, f"expected an object, found {_kind(loc)}")
            phys = loc.get("physicalLocation")
            if phys is None:
                continue
            if not isinstance(phys, dict):
                raise fail(lp + ".physicalLocation", f"expected an object, found {_kind(phys)}")
            art = phys.get("artifactLocation")
            if art is not None:
                if not isinstance(art, dict):
                    raise fail(lp + ".physicalLocation.artifactLocation", f"expected an object, found {_kind(art)}")
                uri = art.get("uri", "")
                base = art.get("uriBaseId", "")
                if not isinstance(uri, str):
                    raise fail(lp + ".physicalLocation.artifactLocation.uri", f"expected a string, found {_kind(uri)}")
                if not isinstance(base, str):
                    raise fail(lp + ".physicalLocation.artifactLocation.uriBaseId",
                               f"expected a string, found {_kind(base)}")
            region = phys.get("region")
            if region is not None:
                if not isinstance(region, dict):
                    raise fail(lp + ".physicalLocation.region", f"expected an object, found {_kind(region)}")
                vals = []
                for key in ("startLine", "startColumn", "endLine", "endColumn"):
                    v = region.get(key, 0)
                    if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                        raise fail(f"{lp}.physicalLocation.region.{key}",
                                   f"expected a non-negative integer, found {v!r}"[:120])
                    vals.append(v)
                sl, sc, el, ec = vals
                el = el or sl
    props = obj.get("properties")
    severity = ""
    if isinstance(props, dict):
        for key in ("issue_severity", "severity", "security-severity"):
            v = props.get(key)
            if isinstance(v, (str, int, float)) and not isinstance(v, bool):
                severity = _severity_word(v)
                if severity:
                    break
    # kept: twice what is stored, so that a secret that starts within the stored part is
    # whole when the redactor sees it (import_sarif); memory stays bounded per result
    text = " ".join(text[:MAX_MESSAGE * 8].split())[:MAX_MESSAGE * 2]
    run.results.append((rule_id, rule_index, level, text, uri, base, sl, max(sc - 1, 0), el, max(ec - 1, 0),
                        severity))


def _severity_word(v) -> str:
    """A severity as a word: a CVSS-like number (GitHub's ``security-severity``) or a word."""
    try:
        x = float(v)
    except (TypeError, ValueError):
        w = str(v).strip().lower()
        return {"critical": "critical", "high": "high", "medium": "medium", "moderate": "medium", "low": "low",
                "info": "info", "informational": "info", "undefined": ""}.get(w, "")
    return "critical" if x >= 9 else "high" if x >= 7 else "medium" if x >= 4 else "low" if x > 0 else "info"


_LEVEL_SEVERITY = {"error": "high", "warning": "medium", "note": "low", "none": "info"}


def _finish_run(run: _Run, fail) -> ParsedRun:
    here = f"$.runs[{run.index}]"
    tool = run.tool
    if not isinstance(tool, dict):
        raise fail(here + ".tool", "missing" if tool is None else f"expected an object, found {_kind(tool)}")
    driver = tool.get("driver")
    if not isinstance(driver, dict):
        raise fail(here + ".tool.driver", "missing" if driver is None else f"expected an object, found {_kind(driver)}")
    tname = driver.get("name")
    if not isinstance(tname, str) or not tname.strip():
        raise fail(here + ".tool.driver.name", "missing" if tname is None else f"expected a string, found {_kind(tname)}")
    rules = driver.get("rules", [])
    if not isinstance(rules, list):
        raise fail(here + ".tool.driver.rules", f"expected an array, found {_kind(rules)}")
    by_id: dict[str, tuple[str, str]] = {}
    by_index: list[tuple[str, str, str]] = []
    for k, r in enumerate(rules):
        if not isinstance(r, dict):
            raise fail(f"{here}.tool.driver.rules[{k}]", f"expected an object, found {_kind(r)}")
        rid = r.get("id", "")
        cfg = r.get("defaultConfiguration")
        lv = cfg.get("level", "") if isinstance(cfg, dict) else ""
        if lv and lv not in LEVELS:
            raise fail(f"{here}.tool.driver.rules[{k}].defaultConfiguration.level",
                       f"{lv!r} is not a SARIF level ({', '.join(LEVELS)})")
        props = r.get("properties")
        sev = _severity_word(props.get("security-severity", "")) if isinstance(props, dict) else ""
        by_index.append((rid if isinstance(rid, str) else "", lv, sev))
        if isinstance(rid, str) and rid:
            by_id.setdefault(rid, (lv, sev))
    out: list[tuple] = []
    for j, (rid, ridx, level, text, uri, base, sl, sc, el, ec, sev) in enumerate(run.results):
        rule_lv, rule_sev = "", ""
        if 0 <= ridx < len(by_index):
            rid = rid or by_index[ridx][0]
            rule_lv, rule_sev = by_index[ridx][1], by_index[ridx][2]
        elif ridx >= len(by_index) and ridx != -1:
            raise fail(f"{here}.results[{j}].ruleIndex", f"{ridx} is past the {len(by_index)} rules of the driver")
        elif rid in by_id:
            rule_lv, rule_sev = by_id[rid]
        level = level or rule_lv or "warning"
        out.append((rid, level, text, uri, base, sl, sc, el, ec, sev or rule_sev or _LEVEL_SEVERITY[level]))
    scanned = None
    inv = run.invocations
    if isinstance(inv, list):
        for item in inv:
            if isinstance(item, dict):
                for key in ("endTimeUtc", "startTimeUtc"):
                    t = item.get(key)
                    if isinstance(t, str):
                        try:
                            scanned = dt.datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp()
                            break
                        except ValueError:
                            raise fail(f"{here}.invocations[0].{key}", f"{t!r} is not a date-time") from None
            if scanned is not None:
                break
    bases: dict[str, str] = {}
    if isinstance(run.bases, dict):
        for k, v in run.bases.items():
            if isinstance(v, dict) and isinstance(v.get("uri"), str):
                bases[k] = v["uri"] + ("|" + v["uriBaseId"] if isinstance(v.get("uriBaseId"), str) else "")
    return ParsedRun(tname.strip(), out, scanned, bases, run.suppressed, run.skipped)


def _abs_path(uri: str, base: str, bases: dict[str, str], root: str, depth: int = 0) -> str | None:
    """The file system path a result's artifact URI names (relative URIs: against their
    ``uriBaseId`` when the run defines it, else against the workspace root)."""
    if not uri or depth > 8:
        return None
    p = urlparse(uri)
    if p.scheme == "file":
        return unquote(p.path)
    if p.scheme and len(p.scheme) > 1:  # http:, … (a one-letter scheme is a Windows drive)
        return None
    rel = unquote(uri)
    if os.path.isabs(rel):
        return rel
    if base and base in bases:
        b_uri, _, b_base = bases[base].partition("|")
        b = _abs_path(b_uri if b_uri.endswith("/") else b_uri + "/", b_base, bases, root, depth + 1)
        if b:
            return os.path.join(b, rel)
    return os.path.join(root, rel)


def _hash_of(root: str, rel: str) -> str | None:
    from codesynapse.extract import content_hash

    try:
        with open(os.path.join(root, rel), "rb") as f:
            return content_hash(f.read())
    except OSError:
        return None


def _innermost(syms, line: int):
    best = None
    for s in syms:
        if s.kind == "module" or not (s.start_line <= line <= s.end_line):
            continue
        if best is None or (s.end_line - s.start_line, -s.start_line) < (best.end_line - best.start_line,
                                                                          -best.start_line):
            best = s
    return best


def _stamp(st: os.stat_result, policy) -> str:
    """size:mtime of a SARIF file, and the key of the redaction patterns in force when there
    are some (its messages are stored redacted: other patterns import it again)."""
    from codesynapse.policy.model import redaction_stamp

    stamp, redaction = f"{st.st_size}:{st.st_mtime_ns}", redaction_stamp(policy)
    return f"{stamp}:{redaction}" if redaction else stamp


def import_sarif(store, workspace, sarif: str | Path, policy=None, source: str | None = None) -> dict[str, Any]:
    """Read ``sarif`` and replace its tools' findings. Raises SarifError (nothing stored).
    Returns a summary per tool."""
    from codesynapse.extract.redact import redact

    sarif = Path(sarif)
    root = str(workspace.root)
    src = source or workspace.relpath(sarif) or str(sarif.resolve())
    runs = read_sarif(sarif, str(sarif))
    try:
        st = os.stat(sarif)
    except OSError as e:
        raise SarifError(str(sarif), "$", f"cannot be read ({e.strerror or e})") from e
    stamp = _stamp(st, policy)
    extra = tuple(getattr(policy, "redact_patterns", ())) if policy is not None else ()
    rows: list[FindingRow] = []
    per_tool: dict[str, dict[str, Any]] = {}
    file_info: dict[str, tuple[str, list]] = {}  # rel → (hash as the scan saw it, symbols)
    for run in runs:
        scanned_at = run.scanned_at if run.scanned_at is not None else st.st_mtime
        summary = per_tool.setdefault(run.tool, {"tool": run.tool, "results": 0, "stored": 0, "stale": 0,
                                                 "outsideWorkspace": 0, "withoutLocation": 0,
                                                 "suppressed": 0, "scannedAt": scanned_at})
        summary["suppressed"] += run.suppressed
        summary["scannedAt"] = max(summary["scannedAt"], scanned_at)
        for rid, level, text, uri, base, sl, sc, el, ec, sev in run.results:
            summary["results"] += 1
            rel = ""
            if uri:
                ap = _abs_path(uri, base, run.bases, root)
                rel = (workspace.relpath(ap) or "") if ap else ""
                if not rel:
                    summary["outsideWorkspace"] += 1
                    continue
            else:
                summary["withoutLocation"] += 1
            symbol = ""
            fhash = ""
            if rel:
                info = file_info.get(rel)
                if info is None:
                    h = _hash_of(root, rel) or ""
                    try:
                        changed_after = os.stat(os.path.join(root, rel)).st_mtime > scanned_at
                    except OSError:
                        changed_after = True
                    info = file_info[rel] = ("" if changed_after else h, store.symbols_in_file(rel))
                fhash = info[0]
                if sl:
                    s = _innermost(info[1], sl)
                    symbol = s.qname if s is not None else ""
                if not fhash:
                    summary["stale"] += 1
            message = redact(text, extra)[:MAX_MESSAGE]
            rows.append(FindingRow(tool=run.tool, rule_id=redact(rid, extra)[:200], level=level, severity=sev,
                                   message=message, path=rel, start_line=sl, start_col=sc, end_line=el, end_col=ec,
                                   symbol=symbol, file_hash=fhash, source=src))
            summary["stored"] += 1
    import time

    now = time.time()
    fruns = [FindingRun(tool=t, source=src, stamp=stamp, scanned_at=s["scannedAt"], results=s["stored"],
                        imported_at=now) for t, s in sorted(per_tool.items())]
    store.replace_findings(fruns, rows)
    for s in per_tool.values():
        s["scannedAt"] = dt.datetime.fromtimestamp(s["scannedAt"], dt.timezone.utc).isoformat()
    return {"file": src, "runs": list(per_tool.values())}


# -- the policy's `findings:` files ------------------------------------------------------------------
def _matcher(policy):
    from codesynapse.policy.globs import PathMatcher, parse_path_glob

    globs = tuple(getattr(policy, "findings", ()) or ())
    return PathMatcher([parse_path_glob(g) for g in globs], cover=False) if globs else None


def policy_sarif_files(root: str | Path, policy) -> list[str]:
    """Workspace paths of the SARIF files the policy's ``findings:`` globs name."""
    m = _matcher(policy)
    if m is None:
        return []
    root = Path(root)
    out: set[str] = set()
    for g in policy.findings:
        pattern = g.lstrip("/")
        if "/" not in g.rstrip("/"):
            pattern = "**/" + pattern  # a glob without a slash matches at any depth
        try:
            for p in root.glob(pattern):
                if p.is_file():
                    rel = p.relative_to(root).as_posix()
                    if m.match(rel) is not None:
                        out.add(rel)
        except (OSError, ValueError):
            log.warning("findings: cannot list %s", g)
    return sorted(out)


def watched(rel: str, policy) -> bool:
    m = _matcher(policy) if policy is not None else None
    return m is not None and m.match(rel) is not None


def sync_policy_findings(store, root, policy, paths: Iterable[str] | None = None) -> int:
    """Import the policy's SARIF files that changed since they were imported (``paths``:
    only these, a live update), and drop the findings of those that are gone. A file that
    is not valid SARIF is logged and its earlier findings stay. Returns how many changed."""
    from codesynapse.graph.deps import supported

    if not supported(store) or policy is None or not getattr(policy, "findings", ()):
        return 0
    root = Path(root)
    ws = _RootOnly(root)
    present = policy_sarif_files(root, policy) if paths is None else \
        [p for p in paths if watched(p, policy) and (root / p).is_file()]
    runs = store.finding_runs()
    stamps = {r.source: r.stamp for r in runs}
    n = 0
    for rel in present:
        try:
            st = os.stat(root / rel)
        except OSError:
            continue
        if stamps.get(rel) == _stamp(st, policy):
            continue
        try:
            import_sarif(store, ws, root / rel, policy, source=rel)
            n += 1
        except SarifError as e:
            log.warning("findings: %s (the earlier findings of this file stay)", e)
    candidates = {r.source for r in runs} if paths is None else set(paths)
    for src in sorted(candidates):
        if watched(src, policy) and not (root / src).is_file() and src in stamps:
            store.delete_findings_from(src)
            n += 1
    return n


class _RootOnly:
    """What import_sarif needs of a Workspace, for the indexer (which knows only the root)."""

    def __init__(self, root: Path):
        self.root = Path(os.path.realpath(root))

    def relpath(self, path) -> str | None:
        p = Path(path)
        if not p.is_absolute():
            p = self.root / p
        try:
            return Path(os.path.realpath(p)).relative_to(self.root).as_posix()
        except (ValueError, OSError):
            return None
