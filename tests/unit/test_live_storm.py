"""A change storm (a branch switch touching a thousand files) is queued, coalesced and
applied in batches; while it is pending every answer's freshness stamp says so."""

from __future__ import annotations

import shutil
from pathlib import Path

from codesynapse.app import App
from codesynapse.methods import call_method
from codesynapse.settings import load_settings
from codesynapse.watch.live import BATCH_MAX, LiveUpdater

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "python_repo"


def test_storm_is_coalesced_and_stamped(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    shutil.copytree(FIXTURE, root)
    app = App(root, load_settings({"data_dir": str(tmp_path / "data"), "workers": 2}))
    app.index()
    live = LiveUpdater(app)
    gen = root / "gen"
    gen.mkdir()
    for i in range(1000):
        (gen / f"m{i}.py").write_text(f"from shop.pricing import with_tax\n\ndef f{i}(x):\n    return with_tax(x)\n")
    for i in range(1000):
        live.disk_changed(f"gen/m{i}.py")
    for i in range(0, 1000, 2):  # the same paths again: coalesced, not applied twice
        live.disk_changed(f"gen/m{i}.py")
    # queued, not yet applied: answers are served from the last version, stamped as pending
    card = call_method(app, "codesynapse/symbolCard", {"selector": "shop.pricing.with_tax"})
    assert card["provenance"]["freshness"]["pending"] == 1500
    assert card["card"]["counts"]["callers"] == 1
    live.start(watch=False)
    assert live.wait_idle(120)
    live.stop()
    st = call_method(app, "codesynapse/indexStatus", {})
    assert st["pending"] == 0
    assert st["files"] == 1006
    card = call_method(app, "codesynapse/symbolCard", {"selector": "shop.pricing.with_tax"})
    assert card["card"]["counts"]["callers"] == 1001
    # batches of at most BATCH_MAX paths: 1,500 events → at least 3 applies
    assert live.generation >= 1500 // BATCH_MAX
    app.close()
