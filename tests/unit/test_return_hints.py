"""Return hints (issue 18 #4): a receiver that holds a call's result takes the type the called
function declares in another file — Python ``-> Cls`` (``Optional``, ``Self``) or, unannotated,
what every ``return`` builds, Go result
lists (multi-value assignments, named results), TypeScript ``): Foo``. Each rule is shown
binding (resolution ``inferred``) and, beside it, the ambiguous case that must stay unbound:
a union or unannotated result, a receiver that is a parameter or local of unknown type, a
name bound to two calls, overloads that disagree, a result that is no named type.

Every tree is written here and indexed by the real indexer into SQLite; expectations are
written out as (caller, callee text) → (target, resolution)."""

from __future__ import annotations

from pathlib import Path

from codesynapse.index.indexer import Indexer
from codesynapse.store.sqlite.graph import SqliteGraphStore


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, body in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(body)


def _calls(root: Path, db: Path) -> dict[tuple[str, str], tuple[str, str]]:
    store = SqliteGraphStore(db, "g")
    try:
        Indexer(root, store, None, workers=1).index_tree()
        out: dict[tuple[str, str], tuple[str, str]] = {}
        for c in store.all_calls():
            key = (c.caller, c.callee)
            out[key] = (c.target, c.resolution) if key not in out else ("<twice>", "")
        return out
    finally:
        store.close()


def _check(calls, expected) -> None:
    assert {k: calls.get(k, ("<no such call>", "")) for k in expected} == expected


PY_CONN = '''
from typing import Optional


class Connection:
    def putheader(self, k, v):
        pass


class Other:
    def putheader(self, k, v):
        pass


def connect(host) -> Connection:
    return Connection()


def maybe(host) -> "Optional[Connection]":
    return None


def unannotated(host):
    return Connection()


def either(host) -> "Connection | Other":
    return Other()


async def later(host) -> Connection:
    return Connection()


class Pool:
    def get(self) -> Connection:
        return Connection()

    def clone(self) -> "Self":
        return self


class Base:
    def getConnection(self) -> Connection:
        return Connection()
'''

PY_USE = '''
from pkg.conn import connect, maybe, unannotated, either, later, Pool, Base
from pkg import conn


class Client(Base):
    def send(self):
        h = self.getConnection()
        h.putheader("a", "b")

    def module_functions(self):
        c = connect("x")
        c.putheader("a", "b")
        m = maybe("x")
        m.putheader("a", "b")
        q = conn.connect("y")
        q.putheader("a", "b")
        cl = Pool.clone(Pool())
        cl.get()

    def guards(self, connect_param):
        u = unannotated("x")
        u.putheader("a", "b")
        e = either("x")
        e.putheader("a", "b")
        w = later("x")
        w.putheader("a", "b")
        t = connect("x")
        t = Pool()
        t.putheader("a", "b")

    def shadowed(self, connect):
        s = connect("x")
        s.putheader("a", "b")

    def local_shadow(self):
        conn = make_something()
        r = conn.connect("x")
        r.putheader("a", "b")
'''


def test_python_declared_results_across_files(tmp_path):
    _write(tmp_path / "src", {"pkg/__init__.py": "", "pkg/conn.py": PY_CONN, "pkg/use.py": PY_USE})
    calls = _calls(tmp_path / "src", tmp_path / "g.db")
    client = "pkg.use.Client"
    _check(calls, {
        # an inherited method of another file declaring -> Connection (issue 18: h = self.getConnection())
        (f"{client}.send", "h.putheader"): ("pkg.conn.Connection.putheader", "inferred"),
        (f"{client}.module_functions", "c.putheader"): ("pkg.conn.Connection.putheader", "inferred"),
        # Optional[Connection] (quoted) is Connection
        (f"{client}.module_functions", "m.putheader"): ("pkg.conn.Connection.putheader", "inferred"),
        (f"{client}.module_functions", "q.putheader"): ("pkg.conn.Connection.putheader", "inferred"),
        # -> Self is the method's own class
        (f"{client}.module_functions", "cl.get"): ("pkg.conn.Pool.get", "inferred"),
    })
    # an unannotated result read from the body (``return Connection()``): inferred too
    _check(calls, {(f"{client}.guards", "u.putheader"): ("pkg.conn.Connection.putheader", "inferred")})
    # precision guards: a union, a coroutine, a name bound to two values,
    # a parameter or a local that shadows the imported function or module
    _check(calls, {
        (f"{client}.guards", "e.putheader"): ("", "unresolved"),
        (f"{client}.guards", "w.putheader"): ("", "unresolved"),
        (f"{client}.guards", "t.putheader"): ("", "unresolved"),
        (f"{client}.shadowed", "s.putheader"): ("", "unresolved"),
        (f"{client}.local_shadow", "r.putheader"): ("", "unresolved"),
    })


PY_BODIES = '''
import functools


class Connection:
    def putheader(self, k, v):
        pass

    def clone(self):
        return self

    @classmethod
    def make(cls):
        return cls()

    def copy(self):
        return type(self)()


class Other:
    def putheader(self, k, v):
        pass


def unannotated(host):
    if not host:
        return None
    return Connection()


def via_local(host):
    c = Connection()
    c.port = 1
    return c


@functools.lru_cache(maxsize=None)
def cached():
    return Connection()


class Base:
    def getConnection(self, host):
        h = Connection()
        return h


def mixed(host):
    if host:
        return Connection()
    return Other()


def rebound(host):
    c = Connection()
    c = host
    return c


def loop_bound(hosts):
    c = Connection()
    for c in hosts:
        pass
    return c


def param(c):
    return c


def param_default(c=Connection()):
    return c


def generator():
    yield Connection()
    return Connection()


async def coroutine():
    return Connection()


def deco(f):
    return f


@deco
def wrapped():
    return Connection()


def nested_only():
    def inner():
        return Connection()
    return inner


def module_self():
    self = Connection()
    return self


def falls_through(x):
    x.go()


def shadowing_param(Connection):
    return Connection()


def shadowing_local(kind):
    Other = kind
    return Other()
'''

PY_BODIES_USE = '''
from pkg import conn
from pkg.conn import (unannotated, via_local, cached, mixed, rebound, loop_bound, param, param_default,
                      generator, coroutine, wrapped, nested_only, module_self, falls_through, shadowing_param,
                      shadowing_local, Base, Connection)


class Client(Base):
    def send(self):
        h = self.getConnection("x")
        h.putheader("a", "b")

    def bound(self):
        u = unannotated("x")
        u.putheader("a", "b")
        v = via_local("x")
        v.putheader("a", "b")
        k = cached()
        k.putheader("a", "b")
        m = Connection.make()
        m.putheader("a", "b")
        x = conn.Connection()
        c = x.clone()
        c.putheader("a", "b")
        d = x.copy()
        d.putheader("a", "b")
        q = conn.unannotated("y")
        q.putheader("a", "b")
        w = module_self()
        w.putheader("a", "b")

    def unbound(self):
        a = mixed("x")
        a.putheader("a", "b")
        b = rebound("x")
        b.putheader("a", "b")
        c = loop_bound([])
        c.putheader("a", "b")
        d = param(Connection())
        d.putheader("a", "b")
        e = param_default()
        e.putheader("a", "b")
        f = generator()
        f.putheader("a", "b")
        g = coroutine()
        g.putheader("a", "b")
        h = wrapped()
        h.putheader("a", "b")
        i = nested_only()
        i.putheader("a", "b")
        j = falls_through(1)
        j.putheader("a", "b")
        k = shadowing_param(dict)
        k.putheader("a", "b")
        m = shadowing_local(dict)
        m.putheader("a", "b")
'''


def test_python_unannotated_results_across_files(tmp_path):
    """Issue 18 #4: an unannotated function's result is what every ``return`` builds
    (``return Cls(...)``, ``return self`` / ``cls()`` / ``type(self)()``, a local assigned only
    ``Cls(...)``), read from its body; a caller in another file binds at the confidence of a
    declared result. Anything else returned, a generator, a coroutine, a decorator that may
    change the result, or nothing returned: the receiver stays unresolved."""
    _write(tmp_path / "src", {"pkg/__init__.py": "", "pkg/conn.py": PY_BODIES, "pkg/use.py": PY_BODIES_USE})
    calls = _calls(tmp_path / "src", tmp_path / "g.db")
    client = "pkg.use.Client"
    put = ("pkg.conn.Connection.putheader", "inferred")
    _check(calls, {
        # the issue's ``h = self.getConnection(...); h.putheader(...)``, the method in a base
        # class of another file returning a local it built
        (f"{client}.send", "h.putheader"): put,
        (f"{client}.bound", "u.putheader"): put,  # beside ``return None``
        (f"{client}.bound", "v.putheader"): put,
        (f"{client}.bound", "k.putheader"): put,  # lru_cache keeps the result
        (f"{client}.bound", "m.putheader"): put,  # classmethod ``return cls()``
        (f"{client}.bound", "c.putheader"): put,  # ``return self``
        (f"{client}.bound", "d.putheader"): put,  # ``return type(self)()``
        (f"{client}.bound", "q.putheader"): put,  # through the module
        (f"{client}.bound", "w.putheader"): put,  # a local named self outside a class is a local
    })
    _check(calls, {(f"{client}.unbound", f"{v}.putheader"): ("", "unresolved") for v in "abcdefghijkm"})
    store = SqliteGraphStore(tmp_path / "g.db", "g")
    try:
        sigs = {s.qname: s.signature for s in store.all_symbols() if s.path == "pkg/conn.py"}
        conf = {c.callee: c.confidence for c in store.all_calls() if c.caller == f"{client}.bound"}
    finally:
        store.close()
    # the inferred result is shown in the signature, as a comment (never as an annotation)
    assert sigs["pkg.conn.unannotated"] == "def unannotated(host)  # -> Connection"
    assert sigs["pkg.conn.Connection.clone"] == "def clone(self)  # -> Self"
    assert sigs["pkg.conn.mixed"] == "def mixed(host)"
    assert sigs["pkg.conn.param"] == "def param(c)"
    # below a constructor's 0.85, as any declared result
    assert conf["u.putheader"] == 0.8


def test_python_same_file_results_ignore_a_shadowing_parameter(tmp_path):
    """A function of the caller's own file returning ``Kind()`` where ``Kind`` is its
    parameter builds whatever the caller passes: no hint (it bound the module's class)."""
    _write(tmp_path / "src", {"pkg/__init__.py": "", "pkg/one.py": '''
class Connection:
    def putheader(self, k, v):
        pass


def make(Connection):
    return Connection()


def build():
    return Connection()


def use():
    x = make(dict)
    x.putheader("a", "b")
    y = build()
    y.putheader("a", "b")
'''})
    calls = _calls(tmp_path / "src", tmp_path / "g.db")
    _check(calls, {
        ("pkg.one.use", "x.putheader"): ("", "unresolved"),
        ("pkg.one.use", "y.putheader"): ("pkg.one.Connection.putheader", "inferred"),
    })


def test_python_overloads_that_disagree_declare_nothing(tmp_path):
    _write(tmp_path / "src", {"pkg/__init__.py": "", "pkg/conn.py": PY_CONN + '''

class Factory:
    @overload
    def make(self, a: int) -> Connection: ...
    @overload
    def make(self, a: str) -> Other: ...
    def make(self, a):
        return Connection()

    @overload
    def same(self, a: int) -> Connection: ...
    def same(self, a) -> Connection:
        return Connection()
''', "pkg/use.py": '''
from pkg.conn import Factory


def use(f: Factory):
    a = f.make(1)
    a.putheader("a", "b")
    b = f.same(1)
    b.putheader("a", "b")
'''})
    calls = _calls(tmp_path / "src", tmp_path / "g.db")
    _check(calls, {
        ("pkg.use.use", "a.putheader"): ("", "unresolved"),
        ("pkg.use.use", "b.putheader"): ("pkg.conn.Connection.putheader", "inferred"),
    })


GO_LIB = '''package lib

type Command struct{}

func (c *Command) Find(args []string) (*Command, []string, error) { return c, args, nil }
func (c *Command) Execute() error { return nil }

type File struct{}

func (f *File) PosLocation() int { return 0 }

func Parse(src []byte) (pgf *File, err error) { return nil, nil }
func Open() *File { return nil }
func Pair() (a, b *File) { return nil, nil }
func Slice() []File { return nil }
func Files() []*File { return nil }
'''

GO_MAIN = '''package main

import "example.com/g/lib"

func run(c *lib.Command, args []string, open func() *lib.File) {
	cmd, flags, err := c.Find(args)
	cmd.Execute()
	_, _ = flags, err
	pgf, perr := lib.Parse(nil)
	pgf.PosLocation()
	_ = perr
	f := lib.Open()
	f.PosLocation()
	x, y := lib.Pair()
	y.PosLocation()
	_ = x
	s := lib.Slice()
	s.PosLocation()
	g := open()
	g.PosLocation()
	var i interface{ Find([]string) (*lib.Command, []string, error) }
	u, _, _ := i.Find(args)
	u.Execute()
	twice := lib.Open()
	twice = nil
	twice, _ = lib.Pair()
	twice.PosLocation()
}

func loop() {
	for _, elem := range lib.Files() {
		elem.PosLocation()
	}
	for key := range lib.Files() {
		key.PosLocation()
	}
	for _, notSlice := range lib.Open() {
		notSlice.PosLocation()
	}
}
'''


def test_go_results_across_packages(tmp_path):
    _write(tmp_path / "src", {"go.mod": "module example.com/g\n\ngo 1.21\n", "lib/lib.go": GO_LIB,
                              "cmd/main.go": GO_MAIN})
    calls = _calls(tmp_path / "src", tmp_path / "g.db")
    run = "example.com/g/cmd.run"
    lib = "example.com/g/lib"
    _check(calls, {
        # multi-value assignment from a method of another package (the receiver typed by its parameter)
        (run, "cmd.Execute"): (f"{lib}.Command.Execute", "inferred"),
        # named results: (pgf *File, err error)
        (run, "pgf.PosLocation"): (f"{lib}.File.PosLocation", "inferred"),
        (run, "f.PosLocation"): (f"{lib}.File.PosLocation", "inferred"),
        # (a, b *File): the second value is a *File too
        (run, "y.PosLocation"): (f"{lib}.File.PosLocation", "inferred"),
    })
    _check(calls, {
        (run, "s.PosLocation"): ("", "unresolved"),  # []File is no named type
        (run, "g.PosLocation"): ("", "unresolved"),  # a parameter's func value
        (run, "u.Execute"): ("", "unresolved"),  # a local of unknown type (no hint for i)
        (run, "twice.PosLocation"): ("", "unresolved"),  # bound to two calls
    })
    # range over a declared []*File: the value is a *File; the key is an int; a range over a
    # result that is no slice binds nothing
    loop = "example.com/g/cmd.loop"
    _check(calls, {
        (loop, "elem.PosLocation"): (f"{lib}.File.PosLocation", "inferred"),
        (loop, "key.PosLocation"): ("", "unresolved"),
        (loop, "notSlice.PosLocation"): ("", "unresolved"),
    })


TS_SUB = '''
export class Subscription {
  unsubscribe(): void {}
}
export class Other {
  unsubscribe(): void {}
}
export function makeSub(): Subscription {
  return new Subscription();
}
export function either(): Subscription | Other {
  return new Other();
}
export function untyped() {
  return new Subscription();
}
export class Source {
  connect(): Subscription {
    return new Subscription();
  }
  pipe<T>(x: T): Source {
    return this;
  }
}
'''

TS_USE = '''
import { makeSub, either, untyped, Source } from './sub';

export function run(src: Source, fn: () => Source) {
  const s = makeSub();
  s.unsubscribe();
  const c = src.connect();
  c.unsubscribe();
  let r = src.pipe(2);
  r.connect();
  const e = either();
  e.unsubscribe();
  const u = untyped();
  u.unsubscribe();
  const q = fn();
  q.connect();
}

export function shadow(makeSub: () => Source) {
  const s = makeSub();
  s.connect();
}
'''


def test_typescript_declared_return_types(tmp_path):
    _write(tmp_path / "src", {"src/sub.ts": TS_SUB, "src/use.ts": TS_USE})
    calls = _calls(tmp_path / "src", tmp_path / "g.db")
    mods = {c[0].rsplit(".", 1)[0] for c in calls if c[0].endswith(".run")}
    assert len(mods) == 1
    use = mods.pop()  # the module's qname (the TypeScript naming scheme is not what is tested here)
    sub = next(t.rsplit(".", 2)[0] for t, _ in calls.values() if t.endswith(".Source.connect"))
    _check(calls, {
        (f"{use}.run", "s.unsubscribe"): (f"{sub}.Subscription.unsubscribe", "inferred"),
        (f"{use}.run", "c.unsubscribe"): (f"{sub}.Subscription.unsubscribe", "inferred"),
        (f"{use}.run", "r.connect"): (f"{sub}.Source.connect", "inferred"),  # pipe<T>(x: T): Source
    })
    _check(calls, {
        (f"{use}.run", "e.unsubscribe"): ("", "unresolved"),  # a union
        (f"{use}.run", "u.unsubscribe"): ("", "unresolved"),  # no declared return type
        (f"{use}.run", "q.connect"): ("", "unresolved"),  # a parameter's function value
        (f"{use}.shadow", "s.connect"): ("", "unresolved"),  # the parameter shadows the import
    })


def test_chained_calls_on_a_declared_result(tmp_path):
    """``f(...).m()`` with no name in between: the receiver is the call's result, typed the
    same way (TypeScript ``fromEvent(...).pipe(...)``, Python ``self.getConnection().putheader``);
    a chain through a parameter stays unbound."""
    _write(tmp_path / "src", {
        "pkg/__init__.py": "", "pkg/conn.py": PY_CONN,
        "pkg/chain.py": '''
from pkg.conn import connect, Base


class Client(Base):
    def send(self, connect_param):
        self.getConnection().putheader("a", "b")
        connect("x").putheader("a", "b")
        connect_param("x").putheader("a", "b")
''',
        "web/sub.ts": TS_SUB,
        "web/chain.ts": '''
import { makeSub, Source } from './sub';

export function chain(src: Source, make: () => Source) {
  makeSub().unsubscribe();
  src.pipe(1).connect();
  make().connect();
}
'''})
    calls = _calls(tmp_path / "src", tmp_path / "g.db")
    _check(calls, {
        ("pkg.chain.Client.send", "self.getConnection().putheader"): ("pkg.conn.Connection.putheader", "inferred"),
        ("pkg.chain.Client.send", "connect().putheader"): ("pkg.conn.Connection.putheader", "inferred"),
        ("pkg.chain.Client.send", "connect_param().putheader"): ("", "unresolved"),
    })
    chain = next(k[0] for k in calls if k[0].endswith(".chain"))
    sub = next(t.rsplit(".", 2)[0] for t, _ in calls.values() if t.endswith(".Source.connect"))
    _check(calls, {
        (chain, "makeSub().unsubscribe"): (f"{sub}.Subscription.unsubscribe", "inferred"),
        (chain, "src.pipe().connect"): (f"{sub}.Source.connect", "inferred"),
        (chain, "make().connect"): ("", "unresolved"),
    })
