"""Go extraction on fixtures/go_repo: packages named by import path (go.mod), receiver methods
qualified by their type, interfaces and their methods, embedding, doc comments, constants,
imports with aliases, receiver hints (receiver, struct fields, var T, NewT) and TestXxx."""

from __future__ import annotations

from pathlib import Path

from codesynapse.extract import extract_source

ROOT = Path(__file__).resolve().parents[2] / "fixtures" / "go_repo"
STORE = "example.com/shop/internal/store"
SVC = "example.com/shop/internal/service"


def fx(rel: str, root: Path = ROOT, data: bytes | None = None):
    return extract_source(str(root), rel, data if data is not None else (root / rel).read_bytes(), "go")


def symbols(f):
    return [(s.qname, s.kind, s.start_line, s.end_line) for s in f.symbols]


def calls(f):
    return [(c.caller, c.callee, c.line, c.receiver_hint) for c in f.calls]


def test_package_types_methods_and_doc_comments():
    f = fx("internal/store/store.go")
    assert f.module == STORE
    assert symbols(f) == [
        (STORE, "module", 1, 61),
        (f"{STORE}.ErrNotFound", "variable", 10, 10),
        (f"{STORE}.MaxItems", "constant", 13, 13),
        (f"{STORE}.Repository", "interface", 16, 19),
        (f"{STORE}.Repository.Get", "method", 17, 17),
        (f"{STORE}.Repository.Put", "method", 18, 18),
        (f"{STORE}.Product", "struct", 22, 25),
        (f"{STORE}.Memory", "struct", 28, 31),
        (f"{STORE}.NewMemory", "function", 34, 36),
        (f"{STORE}.Memory.Get", "method", 39, 47),
        (f"{STORE}.Memory.Put", "method", 50, 61),
    ]
    sig = {s.qname: (s.signature, s.summary, s.parent) for s in f.symbols}
    assert f.symbols[0].summary == "Package store keeps products in memory."
    assert sig[f"{STORE}.MaxItems"] == ("const MaxItems", "MaxItems caps how many products a store holds.", STORE)
    # a package-level variable: its name, never its value
    assert sig[f"{STORE}.ErrNotFound"] == ("var ErrNotFound", "ErrNotFound is returned for unknown ids.", STORE)
    assert sig[f"{STORE}.Repository"] == (
        "type Repository interface", "Repository is what the service needs from storage.", STORE)
    assert sig[f"{STORE}.Repository.Get"] == ("Get(id string) (Product, error)", "", f"{STORE}.Repository")
    assert sig[f"{STORE}.Memory.Get"] == (
        "func (m *Memory) Get(id string) (Product, error)", "Get returns the product with this id.", f"{STORE}.Memory")
    assert calls(f) == [
        (STORE, "errors.New", 10, ""),  # package-level var initializer
        (f"{STORE}.Memory.Get", "m.mu.Lock", 40, "sync.Mutex"),  # receiver's field, struct in this file
        (f"{STORE}.Memory.Get", "m.mu.Unlock", 41, "sync.Mutex"),
        (f"{STORE}.Memory.Put", "validate", 51, ""),
        (f"{STORE}.Memory.Put", "m.mu.Lock", 54, "sync.Mutex"),
        (f"{STORE}.Memory.Put", "m.mu.Unlock", 55, "sync.Mutex"),
        (f"{STORE}.Memory.Put", "len", 56, ""),
        (f"{STORE}.Memory.Put", "errors.New", 57, ""),
    ]
    assert [(i.module, i.binding) for i in f.imports] == [("errors", "errors"), ("sync", "sync")]


PACKAGE_VARS = b"""package p

import "errors"

// ErrShortWrite means that a write accepted fewer bytes than requested.
var ErrShortWrite = errors.New("short write")

var (
	DefaultClient = &Client{}
	limit         int = 8
	hook          func()
)

type Client struct{}

func (c *Client) Get(u string) error { return nil }

func Get(u string) error { return DefaultClient.Get(u) }

func Shadowed(u string) error {
	DefaultClient := other()
	return DefaultClient.Get(u)
}

func local() { var x = 1; _ = x }
"""


def test_package_level_variables_and_their_types_as_hints(tmp_path):
    f = fx("p/vars.go", root=tmp_path, data=PACKAGE_VARS)  # no go.mod: the directory names the package
    assert symbols(f) == [
        ("p", "module", 1, 25),
        ("p.ErrShortWrite", "variable", 6, 6),
        ("p.DefaultClient", "variable", 9, 9),
        ("p.limit", "variable", 10, 10),
        ("p.hook", "variable", 11, 11),
        ("p.Client", "struct", 14, 14),
        ("p.Client.Get", "method", 16, 16),
        ("p.Get", "function", 18, 18),
        ("p.Shadowed", "function", 20, 23),
        ("p.local", "function", 25, 25),  # a function's own var is no package variable
    ]
    sig = {s.qname: (s.signature, s.summary) for s in f.symbols}
    assert sig["p.ErrShortWrite"] == ("var ErrShortWrite",
                                      "ErrShortWrite means that a write accepted fewer bytes than requested.")
    assert sig["p.limit"] == ("var limit int", "")
    assert calls(f) == [
        ("p", "errors.New", 6, ""),
        ("p.Get", "DefaultClient.Get", 18, "Client"),  # var DefaultClient = &Client{} in this file
        ("p.Shadowed", "other", 21, ""),
        # a local of that name hides the package variable: it holds other()'s result (a return hint)
        ("p.Shadowed", "DefaultClient.Get", 22, "=>=>0.other"),
    ]


def test_sibling_file_shares_the_package():
    f = fx("internal/store/validate.go")
    assert symbols(f) == [(STORE, "module", 1, 11), (f"{STORE}.validate", "function", 6, 11)]
    assert f.symbols[1].summary == "validate rejects products that cannot be sold."
    assert not f.symbols[1].exported


def test_embedding_and_receiver_hints():
    f = fx("internal/service/service.go")
    assert symbols(f) == [
        (SVC, "module", 1, 51),
        (f"{SVC}.Base", "struct", 11, 13),
        (f"{SVC}.Base.Logf", "method", 16, 18),
        (f"{SVC}.Catalog", "struct", 21, 24),
        (f"{SVC}.New", "function", 27, 29),
        (f"{SVC}.Catalog.Price", "method", 32, 39),
        (f"{SVC}.Catalog.discount", "method", 41, 43),
        (f"{SVC}.Catalog.Seed", "method", 46, 51),
    ]
    assert [(i.child, i.base, i.kind) for i in f.inherits] == [(f"{SVC}.Catalog", "Base", "inherits")]
    assert calls(f) == [
        (f"{SVC}.Base.Logf", "log.Printf", 17, ""),
        (f"{SVC}.Catalog.Price", "c.repo.Get", 33, "store.Repository"),
        (f"{SVC}.Catalog.Price", "c.Logf", 35, "Catalog"),
        (f"{SVC}.Catalog.Price", "c.discount", 38, "Catalog"),
        (f"{SVC}.Catalog.Seed", "store.NewMemory", 47, ""),
        (f"{SVC}.Catalog.Seed", "r.Put", 48, "store.Repository"),  # var r store.Repository = …
        (f"{SVC}.Catalog.Seed", "metrics.Inc", 50, ""),
    ]
    assert [s.qname for s in f.symbols if not s.exported] == [f"{SVC}.Catalog.discount"]


def test_tests_aliases_and_constructor_convention():
    f = fx("internal/store/store_test.go")
    assert symbols(f) == [(STORE, "module", 1, 13), (f"{STORE}.TestMemoryPutGet", "test", 5, 13)]
    assert f.symbols[1].is_test
    assert calls(f) == [
        (f"{STORE}.TestMemoryPutGet", "NewMemory", 6, ""),
        (f"{STORE}.TestMemoryPutGet", "m.Put", 7, "Memory"),  # m := NewMemory()
        (f"{STORE}.TestMemoryPutGet", "t.Fatal", 8, "testing.T"),
        (f"{STORE}.TestMemoryPutGet", "m.Get", 10, "Memory"),
        (f"{STORE}.TestMemoryPutGet", "t.Fatal", 11, "testing.T"),
    ]
    main = fx("cmd/shop/main.go")
    assert main.module == "example.com/shop/cmd/shop"
    assert [(i.module, i.alias, i.binding) for i in main.imports] == [
        ("fmt", "", "fmt"),
        ("example.com/shop/internal/service", "", "service"),
        ("example.com/shop/internal/store", "st", "st"),
    ]


def test_without_go_mod_the_directory_names_the_package(tmp_path):
    (tmp_path / "util").mkdir()
    src = b"package util\n\nimport (\n\tyaml \"gopkg.in/yaml.v3\"\n\t\"github.com/x/y/v2\"\n\t. \"strings\"\n)\n\n" \
          b"func TestLike() {}\n"
    f = fx("util/util.go", tmp_path, src)
    assert f.module == "util"
    assert [(i.module, i.name, i.alias, i.binding) for i in f.imports] == [
        ("gopkg.in/yaml.v3", "", "yaml", "yaml"),
        ("github.com/x/y/v2", "", "y", "y"),
        ("strings", "*", "", "strings"),
    ]
    assert [(s.qname, s.kind, s.is_test) for s in f.symbols] == [
        ("util", "module", False), ("util.TestLike", "function", False)]  # not in a _test.go file


MULTI = b"""package p

type Command struct{}

func (c *Command) Execute() {}

type Finder struct{}

func (f *Finder) Find(args []string) (*Command, []string, error) { return nil, nil, nil }

func find(args []string) (cmd *Command, rest []string, err error) { return }

func Run(f *Finder, args []string, o Other) {
	cmd, flags, err := f.Find(args)
	cmd.Execute()
	c2, _, _ := find(flags)
	c2.Execute()
	var c3 *Command
	var e error
	c3, _, e = f.Find(args)
	c3.Execute()
	x, y := o.Thing()
	x.Execute()
	_, _, _ = err, e, y
}
"""


def test_multi_value_assignments_take_their_results_types(tmp_path):
    # issue 18 #4: a name bound from a call's results (Go ``cmd, flags, err = c.Find(args)``)
    # takes that result's type when the function, or the method on a receiver of known type,
    # is declared in this file; else (``o.Thing`` of a type declared elsewhere) a return hint that
    # the resolver reads from the declaring file
    f = fx("p/multi.go", root=tmp_path, data=MULTI)
    assert [(c.callee, c.line, c.receiver_hint) for c in f.calls] == [
        ("f.Find", 14, "Finder"), ("cmd.Execute", 15, "Command"), ("find", 16, ""), ("c2.Execute", 17, "Command"),
        ("f.Find", 20, "Finder"), ("c3.Execute", 21, "Command"), ("o.Thing", 22, "Other"),
        ("x.Execute", 23, "=>Other=>0.o.Thing")]  # Other's method, of another file: a return hint


FIELDS = b"""package p

type View struct{}

func (v *View) ID() string { return "" }

type request struct {
	view *View
	name string
}

func handle(req *request, other Remote) {
	req.view.ID()
	r := &request{}
	r.view.ID()
	other.view.ID()
}
"""


def test_fields_of_parameters_and_locals_of_a_struct_in_this_file(tmp_path):
    # issue 18 #4: a parameter's or local's field takes the field's declared type when the
    # struct is in this file (as the receiver's fields did); an outside type's field gets a
    # field hint (issue 18: the resolver reads the field's type from the struct's signature)
    f = fx("p/fields.go", root=tmp_path, data=FIELDS)
    assert [(c.callee, c.receiver_hint) for c in f.calls] == [
        ("req.view.ID", "View"), ("r.view.ID", "View"), ("other.view.ID", "->view.Remote")]


def test_directive_lines_are_not_the_doc_comment(tmp_path):
    # //go: directives and linter switches instruct tools; the prose around them is the doc
    src = b"""package retry

// Backoff computes the delay before attempt n.
//
//go:noinline
func Backoff(n int) int { return n }

//nolint:gocyclo
// Next picks the next attempt.
func Next(n int) int { return n }
"""
    f = extract_source(str(tmp_path), "retry.go", src, "go")
    by = {s.name: s.summary for s in f.symbols}
    assert by["Backoff"] == "Backoff computes the delay before attempt n."
    assert by["Next"] == "Next picks the next attempt."
