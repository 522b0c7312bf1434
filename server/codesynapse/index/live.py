"""Live updates applied to the index: ``LiveIndex.apply`` takes one debounced batch of
changed paths (from watch/live.py's queue: ``{path: "disk" | "overlay"}``) and brings the
index in line with it — the policy file reloaded (a new policy re-indexes the tree),
manifests, lockfiles and SARIF files synced, changed files re-extracted, vanished ones
dropped, oversize ones stored as skipped — then tells who listens which paths changed.

The change sources and the debouncing stay in watch/; the policy is read from and replaced
in the shared ``IndexState`` (index/state.py), never written into the App.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable

from codesynapse.extract.languages import BY_NAME, detect
from codesynapse.extract.manifests import is_dependency_file
from codesynapse.findings.sarif import sync_policy_findings
from codesynapse.findings.sarif import watched as sarif_watched
from codesynapse.graph.deps import sync_paths as sync_dependency_paths
from codesynapse.graph.model import FileRow
from codesynapse.index.indexer import Candidate
from codesynapse.index.state import short_reason

log = logging.getLogger(__name__)

POLICY_FILE = ".codesynapse.yaml"
DEFAULT_MAX_FILE_BYTES = 1_048_576  # without a policy (as the indexer's walk)


class LiveIndex:
    """Applies batches of changes to the App's index. ``tell(paths)`` is called after
    each batch that changed the index; ``on_policy(diagnostics)`` after the policy file was
    loaded again."""

    def __init__(self, app, tell: Callable[[set[str]], None],
                 on_policy: Callable[[list], None] | None = None):
        self.app = app
        self.state = app.index_state
        self.tell = tell
        self.on_policy = on_policy

    def warm(self, rel: str, data: bytes) -> bool:
        """Prepare an opened document for fast live updates (``Indexer.warm``)."""
        return self.app.indexer.warm(rel, data)

    def full_index(self) -> None:
        """Index the tree from the disk (a queue that overflowed, a new policy)."""
        self.app.index()

    def apply(self, batch: dict[str, str], overlays: dict[str, bytes]) -> bool:
        """Apply ``batch`` (path → "disk" or "overlay"), reading unsaved buffers from
        ``overlays`` (one version of them for the whole batch; an open buffer wins over the
        disk). True when the policy changed and the whole tree was indexed again from the
        disk first (no buffer is in the index then, except this batch's). When it raises,
        the state says ``failed`` with the reason until an update or a full index succeeds."""
        try:
            reindexed = self._apply(dict(batch), overlays)
        except BaseException as e:
            self.state.update_failed(short_reason(e))
            raise
        self.state.update_succeeded()
        return reindexed

    def _apply(self, batch: dict[str, str], overlays: dict[str, bytes]) -> bool:
        reindexed = False
        if POLICY_FILE in batch:
            batch.pop(POLICY_FILE)
            reindexed = self.reload_policy()
        policy = self.state.policy
        self.apply_dependencies(sorted(batch), policy)
        changed, deleted, skipped, applied = self._plan(batch, overlays, policy)
        if changed or deleted or skipped:
            self._update(changed, deleted, skipped, applied)
        return reindexed

    def _plan(self, batch: dict[str, str], ov: dict[str, bytes], policy
              ) -> tuple[list[Candidate], list[str], list[FileRow], dict[str, bytes]]:
        """(files to extract, files to drop, oversize files to store as skipped, the
        buffers among them) for ``batch`` under ``policy``."""
        app = self.app
        changed: list[Candidate] = []
        deleted: list[str] = []
        skipped: list[FileRow] = []
        overlays: dict[str, bytes] = {}
        for rel, kind in sorted(batch.items()):
            override = policy.language_override(rel) if policy is not None else None
            spec = BY_NAME.get(override) if override else detect(rel)
            if spec is None:
                continue
            if policy is not None and policy.excluded(rel):
                deleted.append(rel)
                continue
            if kind == "overlay" and rel in ov:
                data = ov[rel]
                overlays[rel] = data
                changed.append(Candidate(rel, spec.name, len(data), -1))
                continue
            path = os.path.join(app.workspace.root, rel)
            try:
                st = os.stat(path)
            except FileNotFoundError:
                deleted.append(rel)
                continue
            except OSError:
                continue
            if rel in ov:  # an open unsaved buffer wins over the disk
                overlays[rel] = ov[rel]
                changed.append(Candidate(rel, spec.name, len(ov[rel]), -1))
                continue
            max_bytes = getattr(policy, "max_file_bytes", DEFAULT_MAX_FILE_BYTES) if policy is not None \
                else DEFAULT_MAX_FILE_BYTES
            if st.st_size > max_bytes:
                skipped.append(FileRow(path=rel, language=spec.name, size=st.st_size, mtime_ns=st.st_mtime_ns,
                                       status="skipped", reason=f"too large ({st.st_size} > {max_bytes} bytes)"))
                continue
            changed.append(Candidate(rel, spec.name, st.st_size, st.st_mtime_ns))
        stored = {c.path for c in changed}
        deleted = [d for d in deleted if d not in stored]
        known = set(app.store.files_by_paths(deleted)) if deleted else set()  # not every file row
        deleted = [d for d in deleted if d in known]
        return changed, deleted, skipped, overlays

    def _update(self, changed: list[Candidate], deleted: list[str], skipped: list[FileRow],
                overlays: dict[str, bytes]) -> None:
        app = self.app
        app.indexer.update(changed, deleted, skipped, overlays=overlays)
        app.touch()
        sv = getattr(app, "symbol_vectors", None)
        if sv is not None:  # the dense leg's vectors of these files (once started: context/dense.py)
            sv.update_paths({c.path for c in changed} | set(deleted) | {f.path for f in skipped})
        self.tell({c.path for c in changed} | set(deleted))

    def apply_dependencies(self, paths: list[str], policy) -> None:
        """Manifests, lockfiles and the policy's SARIF files among ``paths``: modules and
        findings follow them (graph/deps.py, findings/sarif.py), in one store write."""
        deps_paths = [p for p in paths if is_dependency_file(p)]
        sarif = [p for p in paths if sarif_watched(p, policy)]
        if not deps_paths and not sarif:
            return
        app = self.app
        with app.indexer.lock, app.store.transaction():
            n = sync_dependency_paths(app.store, app.workspace.root, deps_paths, policy)
            n += sync_policy_findings(app.store, app.workspace.root, policy, sarif)
        if n:
            app.touch()
            self.tell(set(deps_paths) | set(sarif))

    def reload_policy(self) -> bool:
        """Load the policy file again: its diagnostics go to ``on_policy``; a policy whose
        fingerprint differs replaces the one in force and the tree is indexed again (newly
        excluded files leave, newly included ones enter). True when it was."""
        # as App.__init__ loads it (app.load_policy_for)
        from codesynapse.policy import load_policy

        policy, diagnostics = load_policy(self.app.workspace.root, self.state.policy)
        changed = self.state.adopt_policy(policy, diagnostics)
        if self.on_policy:
            self.on_policy(diagnostics)
        if changed:
            self.full_index()  # walk + plan
        return changed
