"""``codesynapse bench mcp``: what the MCP bridge costs an agent.

* The whole ``tools/list`` answer as an MCP client receives it (the official SDK's stdio
  client on a real ``codesynapse mcp``), counted with the pinned tokenizers (cl100k_base,
  o200k_base): the issue's cap is 2,000 cl100k tokens. Tool definitions are counted apart
  from answers, as the design records ask; each tool's own share is listed.
* The time a tool call adds over the same request sent to ``codesynapse serve`` directly
  (p50 / p95 of ``symbol_card`` and ``search``, after warm-up), on the small fixture
  repository unless ``--corpus`` names a folder. Timings are measured under whatever load
  the machine has: the section records the load average beside them.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from codesynapse.bench.report import save_raw, say, write_perf_section

CAP_CL100K = 2000
SAMPLES = 50


def _fixture_root() -> Path:
    return Path(__file__).resolve().parents[3] / "fixtures" / "python_repo"


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


async def _measure(root: Path, data: Path, samples: int, calls: list[tuple[str, str, dict[str, Any]]]
                   ) -> dict[str, Any]:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from codesynapse.bench.tokenizer import Tokenizers
    from codesynapse.bridge.lspconn import LspConnection

    env = {**os.environ, "CODESYNAPSE_DATA_DIR": str(data), "CODESYNAPSE_SHARE": "0"}
    params = StdioServerParameters(command=sys.executable, args=["-m", "codesynapse", "mcp", "--root", str(root)],
                                   env=env)
    tok = Tokenizers()
    out: dict[str, Any] = {}
    mcp_ms: dict[str, list[float]] = {}
    direct_ms: dict[str, list[float]] = {}
    conn = LspConnection(root, env=env)  # the same request sent directly, interleaved with the MCP calls
    await conn.start()
    try:
        with open(os.devnull, "w") as err:
            async with stdio_client(params, errlog=err) as (r, w):
                async with ClientSession(r, w, read_timeout_seconds=300) as s:
                    await s.initialize()
                    listed = await s.list_tools()
                    wire = json.dumps(listed.model_dump(mode="json", by_alias=True, exclude_none=True),
                                      separators=(",", ":"))
                    out["toolsList"] = {"bytes": len(wire.encode()), **tok.count(wire), "tools": len(listed.tools),
                                        "perTool": {t.name: tok.count(json.dumps(
                                            t.model_dump(mode="json", by_alias=True, exclude_none=True),
                                            separators=(",", ":")))["cl100k_base"] for t in listed.tools}}
                    out["tokenizer"] = tok.label()
                    for tool, method, args in calls:
                        await s.call_tool(tool, args)  # warm-up (and the first index)
                        await conn.request(method, args)
                        mcp_ms[tool], direct_ms[tool] = [], []
                        for _ in range(samples):
                            t0 = time.perf_counter()
                            res = await s.call_tool(tool, args)
                            mcp_ms[tool].append((time.perf_counter() - t0) * 1000)
                            if res.is_error:
                                raise RuntimeError(f"{tool}: {res.content[0].text}")
                            t0 = time.perf_counter()
                            await conn.request(method, args)
                            direct_ms[tool].append((time.perf_counter() - t0) * 1000)
    finally:
        await conn.close()
    out["latencyMs"] = {t: {"mcpP50": statistics.median(mcp_ms[t]), "mcpP95": _pct(mcp_ms[t], 0.95),
                            "directP50": statistics.median(direct_ms[t]), "directP95": _pct(direct_ms[t], 0.95),
                            "addedP50": statistics.median(mcp_ms[t]) - statistics.median(direct_ms[t])}
                        for t, _m, _a in calls}
    return out


def section(res: dict[str, Any], load: str, corpus: str, samples: int) -> str:
    tl = res["toolsList"]
    ok = tl["cl100k_base"] <= CAP_CL100K
    lines = ["## MCP bridge (`codesynapse bench mcp`)", "",
             f"Tool definitions: the whole `tools/list` answer ({tl['tools']} tools, {tl['bytes']:,} bytes of JSON "
             f"as the MCP SDK client receives it) is **{tl['cl100k_base']:,} cl100k tokens** "
             f"({tl['o200k_base']:,} o200k) — target ≤ {CAP_CL100K:,}: {'met' if ok else 'missed'} "
             f"({res['tokenizer']}).", "",
             "| tool | definition tokens (cl100k) |", "|---|---:|"]
    lines += [f"| `{k}` | {v} |" for k, v in sorted(res["toolsList"]["perTool"].items(), key=lambda kv: -kv[1])]
    lines += ["", f"Time a tool call adds over the same LSP request sent to `codesynapse serve` directly "
                  f"({corpus}, {samples} calls each after a warm-up, the two interleaved; load average {load}):", "",
              "| tool | MCP p50 ms | MCP p95 ms | direct p50 ms | direct p95 ms | added p50 ms |",
              "|---|---:|---:|---:|---:|---:|"]
    for t, v in res["latencyMs"].items():
        lines.append(f"| `{t}` | {v['mcpP50']:.2f} | {v['mcpP95']:.2f} | {v['directP50']:.2f} | "
                     f"{v['directP95']:.2f} | {v['addedP50']:.2f} |")
    lines += ["", "Method: the SDK's stdio client starts `codesynapse mcp`, which starts its own "
                  "`codesynapse serve` (one process here, `CODESYNAPSE_SHARE=0`); the direct figures use one LSP "
                  "connection to another `codesynapse serve` on the same data folder."]
    return "\n".join(lines) + "\n"


def run_mcp(args) -> dict[str, Any]:
    corpus = [c for c in getattr(args, "corpus", []) or [] if Path(c).is_dir()]
    samples = 10 if getattr(args, "quick", False) else SAMPLES
    with tempfile.TemporaryDirectory(prefix="codesynapse-bench-mcp-") as tmp:
        if corpus:
            root = Path(corpus[0]).resolve()
        else:
            root = Path(tmp) / "python_repo"
            shutil.copytree(_fixture_root(), root)
        calls = [("symbol_card", "codesynapse/symbolCard", {"selector": "shop.cart.Cart.total"}),
                 ("search", "codesynapse/search", {"query": "cart", "limit": 5})] if not corpus else \
            [("search", "codesynapse/search", {"query": "open", "limit": 5})]
        load = " / ".join(f"{x:.2f}" for x in os.getloadavg())
        say(f"bench mcp on {root} (load {load})")
        res = asyncio.run(_measure(root, Path(tmp) / "data", samples, calls))
    res["load"] = load
    say(f"tools/list: {res['toolsList']['cl100k_base']} cl100k tokens; "
        + "; ".join(f"{t}: +{v['addedP50']:.2f} ms p50" for t, v in res["latencyMs"].items()))
    save_raw("mcp", res)
    out = Path(args.out)
    write_perf_section(out, "mcp", section(res, load, str(root.name) if corpus else "the python_repo fixture", samples))
    return res
