"""The graph stage follows a type's members read without a call (issue 16): a property (or a
getter, a bound method handed on) is a function the code runs without parentheses, so the
index keeps no call edge for it, and a property that does the work (a progress bar's ``eta``)
was reachable from no hit. The hit's file is read: a member's name after a dot, not followed
by ``(``, is a read of it, in both directions (what the hit reads, and who reads the hit)."""

from __future__ import annotations

from codesynapse.app import App
from codesynapse.context.budget import Deadline
from codesynapse.context.retrieval import Retriever
from codesynapse.settings import load_settings

METER = '''class Meter:
    def __init__(self, total):
        self.total = total
        self.done = 0
        self.started = 0.0

    def render_line(self):
        """Render the progress line shown in the terminal."""
        return "%d/%d %s" % (self.done, self.total, self.eta)

    @property
    def eta(self):
        return self.seconds_per_step * (self.total - self.done)

    @property
    def seconds_per_step(self):
        """Average seconds per finished step."""
        return self.started / max(1, self.done)

    def unrelated(self):
        return self.total
'''


def _app(tmp_path):
    root = tmp_path / "repo"
    (root / "meter").mkdir(parents=True)
    (root / "meter" / "bar.py").write_text(METER)
    a = App(root, load_settings({"data_dir": str(tmp_path / "data"), "workers": 1, "symbol_vectors": False}))
    a.index()
    return a


def _graph_found(a, task):
    got = Retriever(a, a.store).rank(task, Deadline())
    return {got.rows[i].qname: got.legs.get(i, set()) for i in got.order if got.score.get(i, 0.0) > 0}


def test_a_property_the_hit_reads_and_the_property_reading_the_hit_get_a_share(tmp_path):
    a = _app(tmp_path)
    try:
        # the premise: no call edge reaches the properties
        assert not a.store.callers_many(["bar.Meter.eta"], limit=5).get("bar.Meter.eta")
        found = _graph_found(a, "render the progress line shown in the terminal")
        assert "graph" in found.get("bar.Meter.eta", set())  # read by the hit
        found = _graph_found(a, "average seconds per finished step")
        assert "graph" in found.get("bar.Meter.eta", set())  # reads the hit
        assert "bar.Meter.unrelated" not in found
    finally:
        a.close()


JAVA = '''package shapes;

public class Box {
    private final int size;

    public Box(int size) {
        this.size = size;
    }

    /** The number of items the box holds. */
    public int size() {
        return size;
    }

    public boolean fits(int n) {
        return n <= this.size;
    }
}
'''


def test_where_a_field_may_share_a_methods_name_a_read_is_not_the_methods(tmp_path):
    root = tmp_path / "repo"
    (root / "src" / "shapes").mkdir(parents=True)
    (root / "src" / "shapes" / "Box.java").write_text(JAVA)
    a = App(root, load_settings({"data_dir": str(tmp_path / "data"), "workers": 1, "symbol_vectors": False}))
    try:
        a.index()
        rows = a.store.symbols_in_file("src/shapes/Box.java")
        size = next(r for r in rows if r.name == "size" and r.kind == "method")
        fits = next(r for r in rows if r.name == "fits")
        in_files = a.store.symbols_in_files([size.path])
        reads, readers = Retriever(a, a.store)._member_reads([size, fits], in_files)
        # "this.size" in fits() and in the constructor is the field, not size()
        assert not readers.get(size.id) and not reads.get(fits.id)
    finally:
        a.close()


class _WithoutMembersRead:
    """The store without ``members_in_files`` (a backend that has no such read)."""

    def __init__(self, inner):
        self._inner = inner

    def __getattr__(self, name):
        if name == "members_in_files":
            raise AttributeError(name)
        return getattr(self._inner, name)


def test_the_kin_of_the_hits_are_the_same_with_and_without_the_stores_members_read(tmp_path):
    a = _app(tmp_path)
    try:
        hits = [s for s in a.store.all_symbols() if s.qname in ("bar.Meter", "bar.Meter.eta")]
        with_read = Retriever(a, a.store)._kin_in_files(hits)
        without = Retriever(a, _WithoutMembersRead(a.store))._kin_in_files(hits)
        assert with_read == without
        assert [x.qname for x in with_read["meter/bar.py"]] == [
            "bar.Meter.__init__", "bar.Meter.render_line", "bar.Meter.eta", "bar.Meter.seconds_per_step",
            "bar.Meter.unrelated"]
    finally:
        a.close()
