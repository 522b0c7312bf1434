"""``codesynapse findings import FILE.sarif …``: import SARIF logs into a repository's index.

The index is brought up to date first (unless ``--no-index``), so that results attach to
the symbols of the files as they are. Each file is one store write: a malformed file stores
nothing, says which file and which JSON path, and the command exits with status 1.
"""

from __future__ import annotations

import json
import sys


def run_import(args, settings) -> int:
    from codesynapse.app import App
    from codesynapse.findings.sarif import SarifError, import_sarif
    from codesynapse.graph.deps import supported

    app = App(args.root, settings)
    status = 0
    try:
        if not supported(app.store):
            sys.stderr.write(f"codesynapse: the {settings.backend} backend does not store findings yet\n")
            return 1
        if not args.no_index:
            app.index()
        for f in args.files:
            try:
                with app.indexer.lock, app.store.transaction():
                    summary = import_sarif(app.store, app.workspace, f, app.policy)
            except SarifError as e:
                sys.stderr.write(f"codesynapse: {e} (nothing stored)\n")
                status = 1
                continue
            json.dump(summary, sys.stdout, indent=2)
            sys.stdout.write("\n")
    finally:
        app.close()
    return status
