"""sysmem.trim gives the pages a process freed back to the system (glibc)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SERVER = Path(__file__).resolve().parents[2] / "server"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_trim_returns_freed_heap_pages_that_free_kept():
    # In a fresh interpreter: 1 KB objects (glibc's heap, not Python's small-object arenas),
    # every 64th kept so the heap cannot shrink from its top by itself; the rest freed.
    script = textwrap.dedent(
        """
        import sys
        sys.path.insert(0, sys.argv[1])
        from codesynapse.bench.proc import rss_bytes
        from codesynapse.sysmem import trim
        import os
        blocks = [bytes(1000) + i.to_bytes(4, "little") for i in range(200_000)]
        kept = blocks[::64]
        del blocks
        before = rss_bytes(os.getpid())
        ok = trim()
        after = rss_bytes(os.getpid())
        print(ok, before, after, len(kept))
        """
    )
    out = subprocess.run([sys.executable, "-c", script, str(SERVER)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    ok, before, after, _ = out.stdout.split()
    assert ok == "True"
    # ~200 MB were allocated and ~197 MB freed: most of it leaves the resident set
    assert int(before) - int(after) > 100 * 1024 * 1024, (before, after)
