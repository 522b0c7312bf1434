"""Dependency manifests → the modules a repository requires (metadata only).

Read: ``pyproject.toml`` (PEP 621 ``[project]``, PEP 735 ``[dependency-groups]``,
``[build-system]`` and Poetry's ``[tool.poetry]`` tables), ``requirements*.txt``,
``package.json``, ``go.mod``, ``Cargo.toml``, ``pom.xml`` and ``build.gradle(.kts)`` (best
effort: declarations it cannot read are named in the notes, with their line). Lockfiles
beside a manifest give resolved versions: ``poetry.lock``/``uv.lock``, ``package-lock.json``,
``Cargo.lock``; ``go.sum`` confirms a ``go.mod`` version (Go selects exactly that version).

Only names, versions, constraints, scopes and line ranges are kept; every stored string
passes the redactor (a constraint may be a URL with a token in it).
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Callable
from pathlib import PurePosixPath

import msgspec

# file name → manifest kind; lockfile name → the manifest it completes
MANIFESTS = {"pyproject.toml": "pyproject", "package.json": "npm", "go.mod": "go", "Cargo.toml": "cargo",
             "pom.xml": "maven", "build.gradle": "gradle", "build.gradle.kts": "gradle"}
LOCKFILES = {"poetry.lock": "pyproject.toml", "uv.lock": "pyproject.toml", "package-lock.json": "package.json",
             "go.sum": "go.mod", "Cargo.lock": "Cargo.toml"}
ECOSYSTEM = {"pyproject": "pypi", "requirements": "pypi", "npm": "npm", "go": "go", "cargo": "cargo",
             "maven": "maven", "gradle": "maven"}
_REQUIREMENTS = re.compile(r"^requirements[^/]*\.txt$")
MAX_LOCK_BYTES = 64 << 20  # a lockfile larger than this is not read (said in the notes)
MAX_REQUIREMENTS = 5000  # per manifest


def manifest_kind(name: str) -> str | None:
    """The manifest kind of a file name (its last path segment), or None."""
    if name in MANIFESTS:
        return MANIFESTS[name]
    if _REQUIREMENTS.match(name):
        return "requirements"
    return None


def is_dependency_file(relpath: str) -> bool:
    """A manifest or a lockfile that completes one."""
    name = relpath.rsplit("/", 1)[-1]
    return manifest_kind(name) is not None or name in LOCKFILES


def lockfiles_for(relpath: str) -> list[str]:
    """The lockfile paths that may complete the manifest at ``relpath`` (same folder)."""
    name = relpath.rsplit("/", 1)[-1]
    folder = relpath[: -len(name)]
    return [folder + lock for lock, man in LOCKFILES.items() if man == name]


def manifest_for_lockfile(relpath: str) -> str | None:
    name = relpath.rsplit("/", 1)[-1]
    man = LOCKFILES.get(name)
    return relpath[: -len(name)] + man if man else None


def module_key(ecosystem: str, name: str) -> str:
    """The name one module goes by across manifests: PEP 503 for PyPI (``PyYAML`` and
    ``pyyaml`` are one), ``-`` and ``_`` are one for Cargo, others as written."""
    if ecosystem == "pypi":
        return re.sub(r"[-_.]+", "-", name).lower()
    if ecosystem == "cargo":
        return name.replace("_", "-")
    return name


class Requirement(msgspec.Struct, frozen=True, kw_only=True):
    ecosystem: str  # pypi | npm | go | cargo | maven
    name: str  # as written (maven: group:artifact)
    constraint: str = ""  # the version constraint as written ("" = any)
    resolved: str = ""  # the version a lockfile (or go.sum) pins
    scope: str = ""  # "" (runtime) | dev | build | peer | optional:<extra> | group:<name> | test | indirect | managed
    start_line: int = 0
    end_line: int = 0

    @property
    def key(self) -> str:
        return module_key(self.ecosystem, self.name)


class ManifestExtraction(msgspec.Struct, kw_only=True):
    path: str
    kind: str
    ecosystem: str
    requirements: list[Requirement] = []
    notes: list[str] = []  # what could not be read, said once each
    lockfile: str = ""  # the lockfile whose versions were used


Reader = Callable[[str], str | None]  # relpath → text (None when the file is absent)


def read_manifest(relpath: str, text: str, read: Reader, redact: Callable[[str], str] = lambda s: s
                  ) -> ManifestExtraction:
    """Parse one manifest (``text``); ``read`` fetches a sibling lockfile's text."""
    kind = manifest_kind(relpath.rsplit("/", 1)[-1])
    if kind is None:
        raise ValueError(f"{relpath} is not a dependency manifest")
    out = ManifestExtraction(path=relpath, kind=kind, ecosystem=ECOSYSTEM[kind])
    reqs: list[Requirement] = []
    try:
        _PARSERS[kind](text, reqs, out.notes)
    except (ValueError, tomllib.TOMLDecodeError, UnicodeError) as e:
        out.notes.append(f"not read: {_one_line(str(e))}")
    if len(reqs) > MAX_REQUIREMENTS:
        out.notes.append(f"requirements after the first {MAX_REQUIREMENTS:,} left out")
        reqs = reqs[:MAX_REQUIREMENTS]
    for lock in lockfiles_for(relpath):
        lock_text = read(lock)
        if lock_text is None:
            continue
        try:
            versions = _LOCK_PARSERS[PurePosixPath(lock).name](lock_text)
        except (ValueError, tomllib.TOMLDecodeError, KeyError, TypeError, AttributeError) as e:
            out.notes.append(f"{PurePosixPath(lock).name} not read: {_one_line(str(e))}")
            continue
        out.lockfile = lock
        reqs = [_with_resolved(r, versions) for r in reqs]
        break
    out.requirements = [msgspec.structs.replace(r, name=redact(r.name), constraint=redact(r.constraint),
                                                resolved=redact(r.resolved)) for r in reqs]
    out.notes = [redact(n) for n in out.notes]
    return out


def _with_resolved(r: Requirement, versions: dict[str, str]) -> Requirement:
    if r.ecosystem == "go":  # go.sum confirms the exact version go.mod selects
        v = versions.get(f"{r.name}@{r.constraint}")
    else:
        v = versions.get(r.key) or versions.get(r.name)
    return msgspec.structs.replace(r, resolved=v) if v else r


def _one_line(s: str) -> str:
    return " ".join(s.split())[:200]


# -- line lookup ---------------------------------------------------------------------------
class _Lines:
    """Where a value is written: the first line at or after ``start`` holding ``needle``."""

    def __init__(self, text: str):
        self.lines = text.splitlines()

    def find(self, needle: str, start: int = 1, end: int | None = None) -> int:
        stop = len(self.lines) if end is None else min(end, len(self.lines))
        for i in range(max(start, 1) - 1, stop):
            if needle in self.lines[i]:
                return i + 1
        return 0

    def header(self, table: str) -> int:
        """Line of a TOML table header ``[table]`` (spaces and quotes as written vary)."""
        want = table.replace(" ", "").replace('"', "").replace("'", "")
        for i, line in enumerate(self.lines):
            s = line.strip()
            if s.startswith("[") and not s.startswith("[["):
                got = s.split("]", 1)[0][1:].replace(" ", "").replace('"', "").replace("'", "")
                if got == want:
                    return i + 1
        return 0

    def key_line(self, key: str, start: int) -> int:
        """The line of ``key = …`` in the table that starts at ``start`` (0: not found)."""
        pat = re.compile(r'^\s*["\']?' + re.escape(key) + r'["\']?\s*=')
        for i in range(max(start, 1), len(self.lines)):
            s = self.lines[i]
            if s.lstrip().startswith("[") and i + 1 != start:
                break
            if pat.match(s):
                return i + 1
        return 0

    def value_end(self, line: int) -> int:
        """The last line of a TOML value starting at ``line`` (multi-line arrays/tables)."""
        depth = 0
        for i in range(line - 1, len(self.lines)):
            s = re.sub(r'"(?:\\.|[^"\\])*"|\'[^\']*\'', '""', self.lines[i].split("#", 1)[0])
            depth += s.count("[") + s.count("{") - s.count("]") - s.count("}")
            if depth <= 0:
                return i + 1
        return line


# -- Python ----------------------------------------------------------------------------------
_PEP508 = re.compile(r"^\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*(\[[^\]]*\])?\s*(.*)$")


def pep508(spec: str) -> tuple[str, str] | None:
    """(name, constraint) of a PEP 508 requirement; markers (after ``;``) are left out."""
    m = _PEP508.match(spec)
    if not m:
        return None
    rest = m.group(3).split(";", 1)[0].strip()
    if rest.startswith("(") and rest.endswith(")"):
        rest = rest[1:-1].strip()
    return m.group(1), rest


def _pyproject(text: str, reqs: list[Requirement], notes: list[str]) -> None:
    data = tomllib.loads(text)
    lines = _Lines(text)

    def pep_list(items, scope: str, table: str, key: str) -> None:
        if not isinstance(items, list):
            notes.append(f"[{table}] {key} is not a list")
            return
        head = lines.header(table)
        start = lines.key_line(key, head) if head or table == "" else 0
        end = lines.value_end(start) if start else None
        for spec in items:
            if not isinstance(spec, str):
                continue  # PEP 735 {include-group = …}
            p = pep508(spec)
            if p is None:
                notes.append(f"[{table}] {key}: {spec!r} is not a PEP 508 requirement")
                continue
            ln = lines.find(spec, start or 1, end) or start
            reqs.append(Requirement(ecosystem="pypi", name=p[0], constraint=p[1], scope=scope,
                                    start_line=ln, end_line=ln))

    project = data.get("project")
    if isinstance(project, dict):
        if "dependencies" in project:
            pep_list(project["dependencies"], "", "project", "dependencies")
        opt = project.get("optional-dependencies")
        if isinstance(opt, dict):
            for extra, items in opt.items():
                pep_list(items, f"optional:{extra}", "project.optional-dependencies", extra)
    groups = data.get("dependency-groups")
    if isinstance(groups, dict):
        for g, items in groups.items():
            pep_list(items, f"group:{g}", "dependency-groups", g)
    build = data.get("build-system")
    if isinstance(build, dict) and "requires" in build:
        pep_list(build["requires"], "build", "build-system", "requires")
    poetry = data.get("tool", {}).get("poetry") if isinstance(data.get("tool"), dict) else None
    if isinstance(poetry, dict):
        _poetry_table(poetry.get("dependencies"), "", "tool.poetry.dependencies", lines, reqs, notes)
        _poetry_table(poetry.get("dev-dependencies"), "dev", "tool.poetry.dev-dependencies", lines, reqs, notes)
        grp = poetry.get("group")
        if isinstance(grp, dict):
            for g, body in grp.items():
                if isinstance(body, dict):
                    _poetry_table(body.get("dependencies"), f"group:{g}", f"tool.poetry.group.{g}.dependencies",
                                  lines, reqs, notes)


def _poetry_table(table, scope: str, name: str, lines: _Lines, reqs: list[Requirement], notes: list[str]) -> None:
    if not isinstance(table, dict):
        return
    head = lines.header(name)
    for dep, spec in table.items():
        if dep.lower() == "python":
            continue  # the interpreter, not a module
        if isinstance(spec, str):
            constraint = spec
        elif isinstance(spec, dict):
            constraint = str(spec.get("version", "")) or next(
                (f"{k} {spec[k]}" for k in ("git", "path", "url") if k in spec), "")
            if spec.get("optional") and not scope:
                scope = "optional"
        elif isinstance(spec, list):
            constraint = " || ".join(str(x.get("version", "")) for x in spec if isinstance(x, dict))
        else:
            notes.append(f"[{name}] {dep}: not a version or a table")
            continue
        ln = lines.key_line(dep, head) if head else 0
        reqs.append(Requirement(ecosystem="pypi", name=dep, constraint=constraint, scope=scope,
                                start_line=ln, end_line=lines.value_end(ln) if ln else 0))


def _requirements(text: str, reqs: list[Requirement], notes: list[str]) -> None:
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        start = i + 1
        line = lines[i]
        while line.rstrip().endswith("\\") and i + 1 < len(lines):  # continuation
            i += 1
            line = line.rstrip()[:-1] + " " + lines[i]
        i += 1
        s = re.split(r"(?:^|\s)#", line, maxsplit=1)[0].strip()
        if not s:
            continue
        if s.startswith(("-r", "--requirement", "-c", "--constraint")):
            continue  # another requirements file: read on its own when its name says so
        if s.startswith(("-e", "--editable")):
            m = re.search(r"[#&]egg=([A-Za-z0-9._-]+)", s)
            if m:
                reqs.append(Requirement(ecosystem="pypi", name=m.group(1), constraint="editable", scope="",
                                        start_line=start, end_line=i))
            else:
                notes.append(f"line {start}: an editable install without #egg= not read")
            continue
        if s.startswith("-"):
            continue  # --index-url, --hash and other options
        s = re.sub(r"\s--hash[= ]\S+", "", s)
        p = pep508(s)
        if p is None:
            notes.append(f"line {start}: not a requirement")
            continue
        reqs.append(Requirement(ecosystem="pypi", name=p[0], constraint=p[1], start_line=start, end_line=i))


def _toml_lock(text: str) -> dict[str, str]:
    """poetry.lock / uv.lock / Cargo.lock: ``[[package]] name, version``."""
    out: dict[str, str] = {}
    for pkg in tomllib.loads(text).get("package", []):
        name, version = pkg.get("name"), pkg.get("version")
        if isinstance(name, str) and isinstance(version, str):
            for k in (module_key("pypi", name), module_key("cargo", name), name):
                out.setdefault(k, version)
    return out


# -- JavaScript --------------------------------------------------------------------------------
_NPM_SECTIONS = (("dependencies", ""), ("devDependencies", "dev"), ("peerDependencies", "peer"),
                 ("optionalDependencies", "optional"))


def _package_json(text: str, reqs: list[Requirement], notes: list[str]) -> None:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"invalid JSON at line {e.lineno}: {e.msg}") from None
    if not isinstance(data, dict):
        raise ValueError("package.json is not an object")
    lines = _Lines(text)
    for section, scope in _NPM_SECTIONS:
        deps = data.get(section)
        if deps is None:
            continue
        if not isinstance(deps, dict):
            notes.append(f"{section} is not an object")
            continue
        head = lines.find(f'"{section}"')
        for name, spec in deps.items():
            ln = lines.find(f'"{name}"', head + 1 if head else 1) if head else 0
            reqs.append(Requirement(ecosystem="npm", name=name, constraint=str(spec), scope=scope,
                                    start_line=ln, end_line=ln))


def _package_lock(text: str) -> dict[str, str]:
    data = json.loads(text)
    out: dict[str, str] = {}
    for path, meta in (data.get("packages") or {}).items():  # lockfile v2/v3
        if path.startswith("node_modules/") and "/node_modules/" not in path[len("node_modules/"):]:
            if isinstance(meta, dict) and isinstance(meta.get("version"), str):
                out[path[len("node_modules/"):]] = meta["version"]
    for name, meta in (data.get("dependencies") or {}).items():  # v1
        if isinstance(meta, dict) and isinstance(meta.get("version"), str):
            out.setdefault(name, meta["version"])
    return out


# -- Go ----------------------------------------------------------------------------------------
def _go_mod(text: str, reqs: list[Requirement], notes: list[str]) -> None:
    block = ""
    for i, raw in enumerate(text.splitlines(), 1):
        line = raw.split("//", 1)[0].strip()
        comment = raw.split("//", 1)[1].strip() if "//" in raw else ""
        if block:
            if line == ")":
                block = ""
                continue
            body = line
            verb = block
        else:
            m = re.match(r"^(require|replace|exclude|retract|tool|godebug)\s*(\(?)\s*(.*)$", line)
            if not m:
                continue
            if m.group(2) == "(":
                block = m.group(1)
                continue
            verb, body = m.group(1), m.group(3)
        if verb == "require":
            parts = body.split()
            if len(parts) >= 2:
                reqs.append(Requirement(ecosystem="go", name=parts[0].strip('"'), constraint=parts[1],
                                        scope="indirect" if comment.startswith("indirect") else "",
                                        start_line=i, end_line=i))
            elif parts:
                notes.append(f"line {i}: require without a version")
        elif verb == "replace" and body:
            notes.append(f"line {i}: replace directive not applied ({_one_line(body)[:80]})")


def _go_sum_versions(text: str) -> dict[str, str]:
    """go.sum lines ``module version[/go.mod] hash``: every version it confirms, by module."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3:
            out.setdefault(parts[0] + "@" + parts[1].removesuffix("/go.mod"), parts[1].removesuffix("/go.mod"))
    return out


# -- Rust --------------------------------------------------------------------------------------
def _cargo(text: str, reqs: list[Requirement], notes: list[str]) -> None:
    data = tomllib.loads(text)
    lines = _Lines(text)
    tables: list[tuple[str, object, str]] = []
    for section, scope in (("dependencies", ""), ("dev-dependencies", "dev"), ("build-dependencies", "build")):
        if section in data:
            tables.append((section, data[section], scope))
        ws = data.get("workspace")
        if isinstance(ws, dict) and section in ws:
            tables.append((f"workspace.{section}", ws[section], scope))
    target = data.get("target")
    if isinstance(target, dict):
        for cfg, body in target.items():
            if isinstance(body, dict):
                for section, scope in (("dependencies", ""), ("dev-dependencies", "dev"),
                                       ("build-dependencies", "build")):
                    if section in body:
                        tables.append((f"target.{cfg}.{section}", body[section], scope))
    for table, deps, scope in tables:
        if not isinstance(deps, dict):
            continue
        head = lines.header(table)
        for name, spec in deps.items():
            real = name
            if isinstance(spec, str):
                constraint = spec
            elif isinstance(spec, dict):
                real = spec.get("package", name) if isinstance(spec.get("package", name), str) else name
                constraint = str(spec.get("version", "")) or next(
                    (f"{k} {spec[k]}" for k in ("git", "path") if k in spec),
                    "workspace" if spec.get("workspace") else "")
            else:
                notes.append(f"[{table}] {name}: not a version or a table")
                continue
            ln = lines.key_line(name, head) if head else lines.find(f"{table}.{name}")
            reqs.append(Requirement(ecosystem="cargo", name=real, constraint=constraint, scope=scope,
                                    start_line=ln, end_line=lines.value_end(ln) if ln else 0))


# -- Java --------------------------------------------------------------------------------------
def _pom(text: str, reqs: list[Requirement], notes: list[str]) -> None:
    import xml.parsers.expat

    parser = xml.parsers.expat.ParserCreate()
    stack: list[str] = []
    props: dict[str, str] = {}
    cur: dict[str, str] | None = None
    buf: list[str] = []
    found: list[tuple[dict[str, str], int, int, str]] = []

    def no_entities(*_a) -> None:
        raise ValueError("the POM declares entities (not read)")

    def start(tag: str, _attrs) -> None:
        nonlocal cur
        tag = tag.rsplit("}", 1)[-1].rsplit(":", 1)[-1]
        stack.append(tag)
        buf.clear()
        if tag == "dependency" and len(stack) >= 3 and stack[-2] == "dependencies":
            cur = {"_line": str(parser.CurrentLineNumber)}

    def end(tag: str) -> None:
        nonlocal cur
        tag = stack.pop()
        text_ = "".join(buf).strip()
        buf.clear()
        if cur is not None and tag == "dependency":
            managed = "dependencyManagement" in stack
            plugin = "plugin" in stack
            found.append((cur, int(cur["_line"]), parser.CurrentLineNumber,
                          "managed" if managed else "plugin" if plugin else ""))
            cur = None
        elif cur is not None and stack and stack[-1] == "dependency":
            cur[tag] = text_
        elif len(stack) == 2 and stack[-1] == "properties":
            props[tag] = text_
        elif len(stack) == 1 and tag in ("version", "groupId"):
            props.setdefault(f"project.{tag}", text_)

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = lambda d: buf.append(d)
    parser.EntityDeclHandler = no_entities
    try:
        parser.Parse(text.encode("utf-8"), True)
    except xml.parsers.expat.ExpatError as e:
        raise ValueError(f"invalid XML at line {e.lineno}: {xml.parsers.expat.ErrorString(e.code)}") from None

    def subst(v: str) -> str:
        def one(m: re.Match[str]) -> str:
            key = m.group(1)
            if key in props:
                return props[key]
            unresolved.add(key)
            return m.group(0)

        return re.sub(r"\$\{([^}]+)\}", one, v)

    for d, a, b, scope in found:
        unresolved: set[str] = set()
        group, artifact = subst(d.get("groupId", "")), subst(d.get("artifactId", ""))
        if not artifact:
            notes.append(f"line {a}: a dependency without artifactId")
            continue
        version = subst(d.get("version", ""))
        if unresolved:
            notes.append(f"line {a}: property {', '.join(sorted(unresolved))} not defined in this POM")
        reqs.append(Requirement(ecosystem="maven", name=f"{group}:{artifact}", constraint=version,
                                scope=scope or d.get("scope", "").strip(), start_line=a, end_line=b))


_GRADLE_CONF = (r"(implementation|api|compileOnly|runtimeOnly|testImplementation|testRuntimeOnly|testCompileOnly|"
                r"annotationProcessor|kapt|ksp|classpath|compile|testCompile|androidTestImplementation|"
                r"debugImplementation|releaseImplementation)")
_GRADLE_STR = re.compile(_GRADLE_CONF + r"""\s*\(?\s*(?:platform\(\s*)?["']([^"'$]+?)["']""")
_GRADLE_MAP = re.compile(_GRADLE_CONF + r"""\s*\(?\s*group\s*[:=]\s*["']([^"']+)["']\s*,\s*name\s*[:=]\s*["']"""
                         r"""([^"']+)["'](?:\s*,\s*version\s*[:=]\s*["']([^"']+)["'])?""")
_GRADLE_ANY = re.compile(r"^\s*" + _GRADLE_CONF + r"\b")


def _gradle(text: str, reqs: list[Requirement], notes: list[str]) -> None:
    unread: list[int] = []
    for i, raw in enumerate(text.splitlines(), 1):
        line = raw.split("//", 1)[0]
        if not _GRADLE_ANY.match(line):
            continue
        m = _GRADLE_MAP.search(line)
        if m:
            conf = m.group(1)
            reqs.append(Requirement(ecosystem="maven", name=f"{m.group(2)}:{m.group(3)}", constraint=m.group(4) or "",
                                    scope=_gradle_scope(conf), start_line=i, end_line=i))
            continue
        m = _GRADLE_STR.search(line)
        if m and m.group(2).count(":") >= 1:
            parts = m.group(2).split(":")
            reqs.append(Requirement(ecosystem="maven", name=f"{parts[0]}:{parts[1]}",
                                    constraint=parts[2] if len(parts) > 2 else "", scope=_gradle_scope(m.group(1)),
                                    start_line=i, end_line=i))
            continue
        if re.search(r"\b(project|files|fileTree|gradleApi|localGroovy)\s*\(", line):
            continue  # another project of the build or local files, not a module
        unread.append(i)
    if unread:
        shown = ", ".join(str(n) for n in unread[:10]) + (" …" if len(unread) > 10 else "")
        notes.append(f"{len(unread)} dependency declaration(s) not read (version catalog, variable or "
                     f"interpolated coordinates) at line(s) {shown}")


def _gradle_scope(conf: str) -> str:
    c = conf.lower()
    if c.startswith(("test", "androidtest")):
        return "test"
    if c in ("compileonly", "annotationprocessor", "kapt", "ksp"):
        return "compile-only" if c == "compileonly" else "build"
    if c == "classpath":
        return "build"
    return ""


_PARSERS: dict[str, Callable[[str, list[Requirement], list[str]], None]] = {
    "pyproject": _pyproject, "requirements": _requirements, "npm": _package_json, "go": _go_mod,
    "cargo": _cargo, "maven": _pom, "gradle": _gradle,
}
_LOCK_PARSERS: dict[str, Callable[[str], dict[str, str]]] = {
    "poetry.lock": _toml_lock, "uv.lock": _toml_lock, "Cargo.lock": _toml_lock,
    "package-lock.json": _package_lock, "go.sum": _go_sum_versions,
}

