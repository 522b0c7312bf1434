"""The scale series of ``codesynapse bench index --corpus scale`` (issue 24): how the time,
the peak memory and the index on disk of a full index grow with the lines indexed.

Points: the CPython stdlib, Django, and the Linux 6.1 kernel at 25%, 50% and 100% of its
files (:func:`codesynapse.bench.corpora.linux_corpus`). Each point is kept in the bench cache
as soon as it is measured (``results/scale/<corpus>.json``), so a series stopped half-way
keeps what it measured and ``python -m codesynapse.bench.scale [--out DIR] [FILE ...]`` writes
the report again from the kept points (or from the given point files). The report is
``scale.json`` (every point and the fits), ``scale.md`` (the table), ``scale.png`` (time and
memory against lines, matplotlib) and the ``scale`` section of ``PERFORMANCE.md``, all in the
output folder (``docs/`` of a checkout by default).

The fits are ordinary least squares of wall seconds, peak RSS (all processes) and index
size against millions of lines; a memory bound shows as a slope near zero.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

SCALE_SERIES = ("python-stdlib", "django", "linux-6.1-25", "linux-6.1-50", "linux-6.1")
MB = 1_000_000


def linear_fit(xs: list[float], ys: list[float]) -> tuple[float, float, float]:
    """Least squares y = a·x + b: (a, b, R²). R² is 1.0 when the ys do not vary."""
    n = len(xs)
    if n == 0:
        raise ValueError("no points to fit")
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    a = sxy / sxx if sxx else 0.0
    b = my - a * mx
    ss_tot = sum((y - my) ** 2 for y in ys)
    ss_res = sum((y - (a * x + b)) ** 2 for x, y in zip(xs, ys))
    return a, b, (1 - ss_res / ss_tot) if ss_tot else 1.0


def point(result: dict[str, Any]) -> dict[str, Any]:
    """One row of the series from an index benchmark result (``{"corpus", "full", "catchUp"}``)."""
    f = result["full"]
    c = result.get("catchUp") or {}
    return {
        "corpus": result["corpus"]["name"],
        "version": result["corpus"]["version"],
        "files": f["files"],
        "parsed": f["parsed"],
        "lines": f["lines"],
        "symbols": f["symbols"],
        "calls": f.get("calls"),
        "wallSeconds": round(f["seconds"], 2),
        "processSeconds": round(f["processWallSeconds"], 2),
        "peakRssAllMB": round(f["peakTreeRss"] / MB, 1),
        "peakRssMainMB": round(f["peakMainRss"] / MB, 1),
        "peakRssWorkerMB": round(f["peakWorkerRss"] / MB, 1),
        "indexMB": round(f["indexBytes"] / MB, 1),
        "catchUpSeconds": round(c["seconds"], 2) if "seconds" in c else None,
        "catchUpPeakRssAllMB": round(c["peakTreeRss"] / MB, 1) if "peakTreeRss" in c else None,
        "loadBefore": f.get("loadBefore"),
        "loadAfter": f.get("loadAfter"),
        "started": result.get("started"),
    }


def fits(points: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Least-squares fits against millions of lines: wall s, peak RSS MB, index MB (each
    ``{"perMLines", "intercept", "r2"}``); empty with fewer than two distinct line counts."""
    xs = [p["lines"] / 1e6 for p in points]
    if len(set(xs)) < 2:
        return {}
    out = {}
    for key, col in (("wallSeconds", "wallSeconds"), ("peakRssAllMB", "peakRssAllMB"), ("indexMB", "indexMB")):
        a, b, r2 = linear_fit(xs, [p[col] for p in points])
        out[key] = {"perMLines": round(a, 3), "intercept": round(b, 3), "r2": round(r2, 4)}
    return out


def _load(v) -> str:
    return f"{v[0]:.1f}" if v else "?"


def scale_markdown(points: list[dict[str, Any]], fit: dict[str, dict[str, float]], png: str | None,
                   machine: dict[str, Any]) -> str:
    from codesynapse.bench.machine import machine_line
    from codesynapse.bench.report import num

    lines = ["### Scale series: measured (`codesynapse bench index --corpus scale`)", "",
             f"* **Machine:** {machine_line(machine)}",
             ("* **Method:** each corpus indexed from an empty data folder by a child process "
              "(`codesynapse.bench.index_child`: `App.index()`, SQLite, default `index.memoryBudget` 1 GB), "
              "its RSS and its workers' sampled from /proc every 50 ms; *peak RSS* is the largest sum over "
              "all of them; *index* is the data folder on disk; *catch-up* re-opens it on the unchanged tree. "
              "*load* is the 1-minute load average before → after (the machine is shared; wall times under "
              "load are upper bounds)."), "",
             ("| corpus | files | lines | symbols | wall s | lines/s | peak RSS all MB | main MB | index MB | "
              "catch-up s | load |"),
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for p in points:
        lines.append(
            f"| {p['version']} | {num(p['files'])} | {num(p['lines'])} | {num(p['symbols'])} | "
            f"{p['wallSeconds']:.1f} | {p['lines'] / p['wallSeconds']:,.0f} | {p['peakRssAllMB']:,.0f} | "
            f"{p['peakRssMainMB']:,.0f} | {p['indexMB']:,.0f} | "
            f"{'—' if p['catchUpSeconds'] is None else format(p['catchUpSeconds'], '.2f')} | "
            f"{_load(p['loadBefore'])} → {_load(p['loadAfter'])} |")
    lines.append("")
    if fit:
        w, m, d = fit["wallSeconds"], fit["peakRssAllMB"], fit["indexMB"]
        def plus(v: float, digits: int) -> str:
            return f"{'+' if v >= 0 else '−'} {abs(v):.{digits}f}"

        lines.append(
            "Least-squares fits against lines indexed (M = millions of lines): "
            f"wall ≈ {w['perMLines']:.1f} s/M {plus(w['intercept'], 1)} s (R² {w['r2']:.3f}); "
            f"peak RSS (all processes) ≈ {m['perMLines']:.1f} MB/M {plus(m['intercept'], 0)} MB (R² {m['r2']:.3f}); "
            f"index on disk ≈ {d['perMLines']:.1f} MB/M {plus(d['intercept'], 0)} MB (R² {d['r2']:.3f}).")
    else:
        lines.append("(Fewer than two points: no fit.)")
    if png:
        lines += ["", f"![time and peak memory against lines]({png})"]
    lines += ["", "Raw points and fits: [scale.json](scale.json)."]
    return "\n".join(lines)


def plot(points: list[dict[str, Any]], fit: dict[str, dict[str, float]], path: Path) -> bool:
    """Wall time and peak RSS against lines (two y axes) with their fitted lines; False when
    matplotlib is not installed (it is in the ``dev`` extra)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    xs = [p["lines"] / 1e6 for p in points]
    fig, ax1 = plt.subplots(figsize=(7.5, 4.2), dpi=110)
    ax1.plot(xs, [p["wallSeconds"] for p in points], "o", color="tab:blue", label="wall (s)")
    ax2 = ax1.twinx()
    ax2.plot(xs, [p["peakRssAllMB"] for p in points], "s", color="tab:red", label="peak RSS, all processes (MB)")
    if fit:
        top = max(xs) * 1.05
        w, m = fit["wallSeconds"], fit["peakRssAllMB"]
        ax1.plot([0, top], [w["intercept"], w["intercept"] + w["perMLines"] * top], "-", color="tab:blue",
                 alpha=0.5, label=f"fit {w['perMLines']:.0f} s per M lines")
        ax2.plot([0, top], [m["intercept"], m["intercept"] + m["perMLines"] * top], "--", color="tab:red",
                 alpha=0.5, label=f"fit {m['perMLines']:.0f} MB per M lines")
    for p, x in zip(points, xs):
        ax1.annotate(p["corpus"], (x, p["wallSeconds"]), textcoords="offset points", xytext=(4, -12), fontsize=7)
    ax1.set_xlabel("lines indexed (millions)")
    ax1.set_ylabel("full index wall (s)", color="tab:blue")
    ax2.set_ylabel("peak RSS, all processes (MB)", color="tab:red")
    ax1.set_xlim(left=0)
    ax1.set_ylim(bottom=0)
    ax2.set_ylim(bottom=0)
    h1, l1 = ax1.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax1.legend(h1 + h2, l1 + l2, loc="upper left", fontsize=7)
    ax1.set_title("codesynapse bench index: time and memory against lines")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return True


def write_scale(out_dir: Path, results: list[dict[str, Any]], machine: dict[str, Any]) -> dict[str, Any]:
    """Write scale.json, scale.md, scale.png and PERFORMANCE.md's ``scale`` section into
    ``out_dir`` from index benchmark results; returns what scale.json holds."""
    from codesynapse.bench.report import write_perf_section

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    points = sorted((point(r) for r in results), key=lambda p: p["lines"])
    fit = fits(points)
    png = "scale.png" if points and plot(points, fit, out_dir / "scale.png") else None
    doc = {"machine": machine, "points": points, "fits": fit,
           "fitUnits": "per million lines indexed; intercept in s or MB"}
    (out_dir / "scale.json").write_text(json.dumps(doc, indent=1, default=str) + "\n", encoding="utf-8")
    body = scale_markdown(points, fit, png, machine)
    (out_dir / "scale.md").write_text("# Scale series (issue 24)\n\n" + body.split("\n", 2)[2] + "\n",
                                      encoding="utf-8")
    write_perf_section(out_dir, "scale", body)
    return doc


def points_dir() -> Path:
    from codesynapse.bench.corpora import cache_dir

    d = cache_dir() / "results" / "scale"
    d.mkdir(parents=True, exist_ok=True)
    return d


def keep_point(result: dict[str, Any], machine: dict[str, Any]) -> Path:
    """Keep one measured point in the bench cache at once (a later failure loses nothing)."""
    path = points_dir() / f"{result['corpus']['name']}.json"
    path.write_text(json.dumps({**result, "machine": machine}, indent=1, default=str) + "\n", encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    from codesynapse.bench.machine import machine_info
    from codesynapse.bench.report import default_out, say

    ap = argparse.ArgumentParser(prog="python -m codesynapse.bench.scale",
                                 description="write the scale-series report again from kept points")
    ap.add_argument("files", nargs="*", help="point files (default: the bench cache's results/scale/*.json)")
    ap.add_argument("--out", default=None, help="output folder (default: docs/ of the checkout)")
    a = ap.parse_args(argv)
    files = [Path(f) for f in a.files] or sorted(points_dir().glob("*.json"))
    results = [json.loads(f.read_text(encoding="utf-8")) for f in files]
    if not results:
        raise SystemExit("no scale points: run `codesynapse bench index --corpus scale` first")
    machine = results[-1].get("machine") or machine_info()
    doc = write_scale(Path(a.out) if a.out else default_out(), results, machine)
    say(f"scale series: {len(doc['points'])} points, fits {json.dumps(doc['fits'])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
