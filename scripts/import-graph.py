#!/usr/bin/env python3
"""The file-level import graph of src/, and its loops: exit 1 when a file imports itself
through other files.

File A imports file B when A names, in a `use` (groups, globs and `pub use` included) or in an
inline qualified path (`crate::x::y`, `super::Item`, `self::x`, `gstvmafcompare::x` in the
command, a path through a module or name in scope), an item that B defines or module B itself.
Re-exports are followed to the file that defines the item (`crate::engine::Scorer` is
src/engine/scorer.rs, not src/engine/mod.rs); a path that goes on past an item stops there
(`Scorer::new` is the file of `Scorer`); a module path whose next name is not found (a macro or
a generated item) is the module's file. `use super::*` imports the parent module's file.
`mod` declarations are not imports, nor are std/core/alloc and other crates, comments, doc
comments, string literals, or modules under `#[cfg(test)]` (`mod tests { ... }` and test-only
module files: test code is left out of the graph). Crate roots: src/lib.rs, and each binary
(src/main.rs, src/bin/NAME.rs, src/bin/NAME/main.rs), whose `crate::` is the binary and whose
paths through the library's crate name lead into src/lib.rs's tree.

    python3 scripts/import-graph.py            # each file and what it imports, then the loops
    python3 scripts/import-graph.py --check    # only the loops, and the count of files/edges
    python3 scripts/import-graph.py --dot | dot -Tsvg > imports.svg   # loops' edges in red

A loop is printed as `loop: a -> b -> a`, every elementary cycle of the graph (up to --max-loops,
then a count). Exit status: 0 no loop, 1 a loop (with --dot too), 2 usage.
"""

import argparse
import os
import re
import signal
import sys

try:
    import tomllib
except ImportError:  # Python < 3.11: the [lib] name by a regular expression below
    tomllib = None

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
EXTERNAL_FIRST = {"std", "core", "alloc", "Self"}
ITEM_KEYWORDS = {"fn", "struct", "enum", "union", "trait", "type", "const", "static"}


# ---------------------------------------------------------------- lexing

class Tok:
    __slots__ = ("kind", "text", "line")

    def __init__(self, kind, text, line):
        self.kind = kind  # "id" (identifier or keyword), "::", "str", "lit", "p" (punctuation)
        self.text = text
        self.line = line

    def __repr__(self):
        return f"{self.kind}:{self.text}@{self.line}"


def is_id_start(c):
    return c == "_" or c.isalpha()


def is_id_char(c):
    return c == "_" or c.isalnum()


def lex(src):
    """Tokens of Rust source: comments dropped, string and char literals one opaque token."""
    toks = []
    i, n, line = 0, len(src), 1

    def skip_string(j):
        # j at the opening quote of a non-raw string; returns the index past the closing quote.
        nonlocal line
        j += 1
        while j < n:
            c = src[j]
            if c == "\\":
                if j + 1 < n and src[j + 1] == "\n":
                    line += 1
                j += 2
                continue
            if c == "\n":
                line += 1
            if c == '"':
                return j + 1
            j += 1
        return n

    def skip_raw_string(j):
        # j at the first `#` or `"` after the r prefix.
        nonlocal line
        hashes = 0
        while j < n and src[j] == "#":
            hashes += 1
            j += 1
        if j >= n or src[j] != '"':
            return None
        end = '"' + "#" * hashes
        k = src.find(end, j + 1)
        if k < 0:
            k = n
        line += src.count("\n", j, k)
        return min(n, k + len(end))

    while i < n:
        c = src[i]
        if c == "\n":
            line += 1
            i += 1
        elif c.isspace():
            i += 1
        elif src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
        elif src.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith("/*", j):
                    depth += 1
                    j += 2
                elif src.startswith("*/", j):
                    depth -= 1
                    j += 2
                else:
                    if src[j] == "\n":
                        line += 1
                    j += 1
            i = j
        elif c == '"':
            start = line
            i = skip_string(i)
            toks.append(Tok("str", '""', start))
        elif c == "'":
            if i + 1 < n and src[i + 1] == "\\":
                j = i + 3
                while j < n and src[j] != "'":
                    j += 1
                toks.append(Tok("lit", "''", line))
                i = j + 1
            elif i + 2 < n and src[i + 2] == "'":
                toks.append(Tok("lit", "''", line))
                i += 3
            else:  # a lifetime or label
                j = i + 1
                while j < n and is_id_char(src[j]):
                    j += 1
                toks.append(Tok("lit", src[i:j], line))
                i = j
        elif is_id_start(c):
            j = i
            while j < n and is_id_char(src[j]):
                j += 1
            word = src[i:j]
            if word in ("b", "c") and j < n and src[j] == '"':
                start = line
                i = skip_string(j)
                toks.append(Tok("str", '""', start))
            elif word == "b" and j < n and src[j] == "'":
                k = j + 1
                if k < n and src[k] == "\\":
                    k += 1
                k += 1
                while k < n and src[k] != "'":
                    k += 1
                toks.append(Tok("lit", "''", line))
                i = k + 1
            elif word in ("r", "br", "cr") and j < n and src[j] in '"#':
                start = line
                end = skip_raw_string(j)
                if end is not None:
                    toks.append(Tok("str", '""', start))
                    i = end
                elif word == "r" and src[j] == "#" and j + 1 < n and is_id_start(src[j + 1]):
                    k = j + 1
                    while k < n and is_id_char(src[k]):
                        k += 1
                    toks.append(Tok("id", "r#" + src[j + 1:k], line))
                    i = k
                else:
                    toks.append(Tok("id", word, line))
                    i = j
            else:
                toks.append(Tok("id", word, line))
                i = j
        elif c.isdigit():
            j = i
            while j < n and is_id_char(src[j]):
                j += 1
            toks.append(Tok("lit", src[i:j], line))
            i = j
        elif src.startswith("::", i):
            toks.append(Tok("::", "::", line))
            i += 2
        else:
            toks.append(Tok("p", c, line))
            i += 1
    return toks


def ident(tok):
    """The identifier a token names (raw identifiers without `r#`), or None."""
    if tok is None or tok.kind != "id":
        return None
    return tok.text[2:] if tok.text.startswith("r#") else tok.text


# ---------------------------------------------------------------- cfg(test)

def cfg_value(toks, i):
    """Evaluates the cfg predicate at toks[i] with `test` false and every other atom unknown.

    Returns (value, next index): False (off without test), True, or None (unknown)."""
    name = ident(toks[i]) if i < len(toks) else None
    i += 1
    if name in ("all", "any", "not") and i < len(toks) and toks[i].text == "(":
        i += 1
        vals = []
        while i < len(toks) and toks[i].text != ")":
            if toks[i].text == ",":
                i += 1
                continue
            v, i = cfg_value(toks, i)
            vals.append(v)
        i += 1
        if name == "not":
            v = vals[0] if vals else None
            return (None if v is None else not v), i
        if name == "all":
            if any(v is False for v in vals):
                return False, i
            return (True if all(v is True for v in vals) else None), i
        if any(v is True for v in vals):
            return True, i
        return (False if all(v is False for v in vals) else None), i
    if i < len(toks) and toks[i].text == "=":  # key = "value"
        return None, i + 2
    return (False if name == "test" else None), i


def test_only(attr):
    """Whether an attribute's tokens (inside `#[...]`) are a cfg that is off without `test`."""
    if len(attr) < 3 or ident(attr[0]) != "cfg" or attr[1].text != "(":
        return False
    value, _ = cfg_value(attr, 2)
    return value is False


# ---------------------------------------------------------------- modules

class Module:
    def __init__(self, name, parent, file, crate, inline=False):
        self.name = name
        self.parent = parent
        self.file = file
        self.crate = crate  # the crate's Crate
        self.inline = inline
        self.children = {}  # name -> Module
        self.items = set()  # names of items defined here
        self.imports = {}  # local name -> path (list of names), as `use` binds them
        self.globs = []  # paths of `use path::*`
        self.dir = None  # where `mod x;` inside this module looks for x.rs / x/mod.rs

    def __repr__(self):
        return f"Module({self.path()})"

    def path(self):
        parts, m = [], self
        while m.parent is not None:
            parts.append(m.name)
            m = m.parent
        return "::".join([self.crate.name] + parts[::-1])


class Crate:
    def __init__(self, name, root_file):
        self.name = name
        self.root_file = root_file
        self.root = None


class FileInfo:
    def __init__(self, path):
        self.path = path
        self.uses = []  # (module, path) each leaf of each `use`, globs as their prefix
        self.paths = []  # (module, path) inline qualified paths


class Graph:
    def __init__(self, src_dir, lib_name):
        self.src_dir = src_dir
        self.base = os.path.dirname(src_dir)  # file names are relative to src/'s parent
        self.lib_name = lib_name
        self.files = {}  # relative path -> FileInfo
        self.lib = None
        self.crates = []
        self.left_out = []  # (file, why)

    def rel(self, path):
        return os.path.relpath(path, self.base)

    # ---------------------------------------------------- parsing one file

    def load_file(self, path, module):
        rel = self.rel(path)
        with open(path, encoding="utf-8") as f:
            toks = lex(f.read())
        info = FileInfo(rel)
        self.files[rel] = info
        self.parse(toks, module, info, path)

    def child_dir(self, module, path):
        """The folder where `mod x;` in the file module at `path` finds x.rs or x/mod.rs."""
        d = os.path.dirname(path)
        if module.parent is None or os.path.basename(path) == "mod.rs":
            return d
        return os.path.join(d, os.path.splitext(os.path.basename(path))[0])

    def parse(self, toks, file_module, info, path):
        file_module.dir = self.child_dir(file_module, path)
        # A stack of open braces: the Module whose body a brace opens, or None.
        stack = []
        pending_attrs = []
        i, n = 0, len(toks)

        def at(k):
            return toks[k] if k < n else None

        def module():
            for m in reversed(stack):
                if m is not None:
                    return m
            return file_module

        def at_item_level():
            return not stack or stack[-1] is not None

        def skip_group(j):
            # toks[j] opens (, [ or {; returns the index past its match.
            depth = 0
            while j < n:
                t = toks[j].text if toks[j].kind == "p" else None
                if t in ("(", "[", "{"):
                    depth += 1
                elif t in (")", "]", "}"):
                    depth -= 1
                    if depth == 0:
                        return j + 1
                j += 1
            return n

        while i < n:
            tok = toks[i]
            # Attributes: remembered for the item they are on.
            if tok.text == "#" and tok.kind == "p":
                j = i + 1
                inner = j < n and toks[j].text == "!"
                if inner:
                    j += 1
                if j < n and toks[j].text == "[":
                    end = skip_group(j)
                    attr = toks[j + 1:end - 1]
                    if not inner:
                        pending_attrs.append(attr)
                    self.scan_paths(attr, module(), info)
                    i = end
                    continue
            if tok.kind == "p" and tok.text == "{":
                stack.append(None)
                pending_attrs = []
                i += 1
                continue
            if tok.kind == "p" and tok.text == "}":
                if stack:
                    stack.pop()
                pending_attrs = []
                i += 1
                continue
            if tok.kind == "p" and tok.text == ";":
                pending_attrs = []
                i += 1
                continue

            # Visibility.
            j = i
            if ident(toks[j]) == "pub":
                j += 1
                if j < n and toks[j].text == "(":
                    j = skip_group(j)
            word = ident(toks[j]) if j < n else None
            attrs, pending_attrs = pending_attrs, []
            cur = module()

            if word == "use":
                i = self.parse_use(toks, j + 1, cur, info, at_item_level())
                continue
            if word == "mod" and ident(at(j + 1)) is not None:
                name = ident(toks[j + 1])
                k = j + 2
                test = any(test_only(a) for a in attrs)
                if k < n and toks[k].text == ";":
                    if at_item_level():
                        if test:
                            self.left_out_file(cur, name, "a #[cfg(test)] module")
                        else:
                            self.declare_file_module(cur, name)
                    i = k + 1
                    continue
                if k < n and toks[k].text == "{":
                    if test or not at_item_level():
                        i = skip_group(k)
                        continue
                    child = Module(name, cur, cur.file, cur.crate, inline=True)
                    child.dir = os.path.join(cur.dir, name)
                    cur.children[name] = child
                    stack.append(child)
                    i = k + 1
                    continue
            if word == "extern" and ident(at(j + 1)) == "crate":
                k = j + 2
                while k < n and toks[k].text != ";":
                    k += 1
                i = k + 1
                continue
            if at_item_level() and word is not None:
                k = j
                while ident(at(k)) in ("unsafe", "async", "default", "auto", "extern") or (
                        at(k) is not None and at(k).kind == "str"):
                    k += 1
                kw = ident(at(k))
                if kw == "const" and ident(at(k + 1)) in ("fn", "unsafe", "async", "extern"):
                    k += 1
                    while ident(at(k)) in ("unsafe", "async", "extern") or (
                            at(k) is not None and at(k).kind == "str"):
                        k += 1
                    kw = ident(at(k))
                if kw == "static" and ident(at(k + 1)) == "mut":
                    k += 1
                name = ident(at(k + 1))
                if kw in ITEM_KEYWORDS and name is not None and name != "_":
                    if kw != "union" or (at(k + 2) is not None and at(k + 2).text in ("{", "<")):
                        cur.items.add(name)
                elif kw == "macro_rules" and at(k + 1) is not None and at(k + 1).text == "!" \
                        and ident(at(k + 2)) is not None:
                    cur.items.add(ident(at(k + 2)))
            # Inline paths.
            i = self.scan_path_at(toks, i, cur, info)

    def scan_paths(self, toks, module, info):
        i = 0
        while i < len(toks):
            i = self.scan_path_at(toks, i, module, info)

    def scan_path_at(self, toks, i, module, info):
        """Records the qualified path that starts at toks[i], if any; returns the next index."""
        tok = toks[i]
        name = ident(tok)
        if name is None:
            return i + 1
        if i > 0 and toks[i - 1].kind == "::":
            return i + 1
        if name == "pub" and i + 1 < len(toks) and toks[i + 1].text == "(":  # pub(crate)
            k = i + 1
            while k < len(toks) and toks[k].text != ")":
                k += 1
            return k + 1
        segs = [name]
        j = i + 1
        while j + 1 < len(toks) and toks[j].kind == "::" and toks[j + 1].kind == "id":
            segs.append(ident(toks[j + 1]))
            j += 2
        if len(segs) > 1:
            info.paths.append((module, segs))
        return j

    def parse_use(self, toks, i, module, info, item_level):
        """Parses a use tree from toks[i] to its `;`; records its paths and bindings."""
        n = len(toks)
        end = i
        depth = 0
        while end < n and not (toks[end].text == ";" and depth == 0):
            if toks[end].text == "{":
                depth += 1
            elif toks[end].text == "}":
                depth -= 1
            end += 1
        body = toks[i:end]
        leaves = []  # (path, binding or None, glob)

        def tree(k, prefix):
            segs = list(prefix)
            if k < len(body) and body[k].kind == "::":
                k += 1
            while k < len(body):
                t = body[k]
                if t.text == "*":
                    leaves.append((segs, None, True))
                    return k + 1
                if t.text == "{":
                    k += 1
                    while k < len(body) and body[k].text != "}":
                        if body[k].text == ",":
                            k += 1
                            continue
                        k = tree(k, segs)
                    return k + 1
                if t.kind == "id":
                    segs.append(ident(t))
                    k += 1
                    if k < len(body) and body[k].kind == "::":
                        k += 1
                        continue
                    binding = segs[-1]
                    if binding == "self":
                        segs = segs[:-1]
                        binding = segs[-1] if segs else None
                    if k + 1 < len(body) and ident(body[k]) == "as":
                        binding = ident(body[k + 1])
                        k += 2
                    if binding == "_":
                        binding = None
                    leaves.append((segs, binding, False))
                    return k
                return k + 1  # unexpected: skip it
            return k

        k = 0
        while k < len(body):
            k = tree(k, [])
        for segs, binding, glob in leaves:
            if not segs:
                continue
            if body and body[0].kind == "::":
                continue  # `use ::crate_name::...`: another crate
            info.uses.append((module, segs))
            if glob:
                module.globs.append(segs)
            elif binding and binding not in module.imports:
                module.imports[binding] = segs
        return end + 1

    def declare_file_module(self, parent, name):
        d = parent.dir
        for cand in (os.path.join(d, name + ".rs"), os.path.join(d, name, "mod.rs")):
            if os.path.isfile(cand):
                child = Module(name, parent, self.rel(cand), parent.crate)
                parent.children[name] = child
                self.load_file(cand, child)
                return
        print(f"import-graph: {parent.file}: `mod {name};` has no file in {self.rel(d)}",
              file=sys.stderr)

    def left_out_file(self, parent, name, why):
        d = parent.dir
        for cand in (os.path.join(d, name + ".rs"), os.path.join(d, name, "mod.rs")):
            if os.path.isfile(cand):
                self.left_out.append((self.rel(cand), why))

    def load(self):
        lib = os.path.join(self.src_dir, "lib.rs")
        roots = []
        if os.path.isfile(lib):
            roots.append((self.lib_name, lib))
        main = os.path.join(self.src_dir, "main.rs")
        if os.path.isfile(main):
            roots.append(("main", main))
        bin_dir = os.path.join(self.src_dir, "bin")
        if os.path.isdir(bin_dir):
            for entry in sorted(os.listdir(bin_dir)):
                p = os.path.join(bin_dir, entry)
                if entry.endswith(".rs") and os.path.isfile(p):
                    roots.append((entry[:-3], p))
                elif os.path.isfile(os.path.join(p, "main.rs")):
                    roots.append((entry, os.path.join(p, "main.rs")))
        for name, path in roots:
            crate = Crate(name, self.rel(path))
            crate.root = Module(name, None, crate.root_file, crate)
            self.crates.append(crate)
            if path == lib:
                self.lib = crate
            self.load_file(path, crate.root)

    # ---------------------------------------------------- resolution

    def lookup(self, module, name, active):
        """What `name` is in `module`: ("mod", Module) or ("item", file), else None."""
        key = (id(module), name)
        if key in active:
            return None
        active.add(key)
        try:
            if name in module.children:
                return ("mod", module.children[name])
            if name in module.items:
                return ("item", module.file)
            if name in module.imports:
                r = self.resolve(module, module.imports[name], active)
                if r is not None:
                    return r
            for glob in module.globs:
                g = self.resolve(module, glob, active)
                if g is not None and g[0] == "mod":
                    r = self.lookup(g[1], name, active)
                    if r is not None:
                        return r
            return None
        finally:
            active.discard(key)

    def resolve(self, module, segs, active=None):
        """What a path names from `module`: ("mod", Module), ("item", file) or None (outside)."""
        if active is None:
            active = set()
        first, rest = segs[0], segs[1:]
        if first == "crate":
            cur = ("mod", module.crate.root)
        elif first == "self":
            cur = ("mod", module)
        elif first == "super":
            m = module.parent
            while rest and rest[0] == "super" and m is not None:
                m = m.parent
                rest = rest[1:]
            if m is None:
                return None
            cur = ("mod", m)
        elif first in EXTERNAL_FIRST:
            return None
        else:
            cur = self.lookup(module, first, active)
            if cur is None and first == self.lib_name and self.lib and module.crate is not self.lib:
                cur = ("mod", self.lib.root)
            if cur is None:
                return None
        for seg in rest:
            if cur[0] != "mod":
                break
            if seg == "self":
                continue
            if seg == "super":
                if cur[1].parent is None:
                    break
                cur = ("mod", cur[1].parent)
                continue
            nxt = self.lookup(cur[1], seg, active)
            if nxt is None:
                break
            cur = nxt
        return cur

    def edges(self):
        out = {f: set() for f in self.files}
        for f, info in self.files.items():
            for module, segs in info.uses + info.paths:
                r = self.resolve(module, segs)
                if r is None:
                    continue
                target = r[1].file if r[0] == "mod" else r[1]
                if target != f and target in out:
                    out[f].add(target)
        return out


# ---------------------------------------------------------------- loops

def components(graph):
    """Tarjan's strongly connected components (iterative)."""
    index, low, on, stack, comps = {}, {}, set(), [], []
    counter = [0]
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    advanced = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                comps.append(sorted(comp))
    return comps


def cycles(graph, limit):
    """Every elementary cycle (Johnson's algorithm), each starting at its smallest file; stops
    after `limit`. Returns (cycles, complete)."""
    found = []
    for comp in components(graph):
        if len(comp) < 2:
            continue
        members = set(comp)
        for s in comp:  # cycles whose smallest file is s
            allowed = {v for v in members if v >= s}
            blocked, bmap, path = set(), {}, [s]

            def unblock(u):
                todo = [u]
                while todo:
                    x = todo.pop()
                    if x in blocked:
                        blocked.discard(x)
                        todo.extend(bmap.pop(x, ()))

            # Iterative circuit search.
            blocked.add(s)
            work = [(s, iter(sorted(w for w in graph[s] if w in allowed)), False)]
            while work:
                v, it, closed = work[-1]
                pushed = False
                for w in it:
                    if w == s:
                        found.append(path + [s])
                        if len(found) >= limit:
                            return found, False
                        closed = True
                        work[-1] = (v, it, closed)
                    elif w not in blocked:
                        work[-1] = (v, it, closed)
                        path.append(w)
                        blocked.add(w)
                        work.append((w, iter(sorted(x for x in graph[w] if x in allowed)), False))
                        pushed = True
                        break
                if pushed:
                    continue
                work.pop()
                if closed:
                    unblock(v)
                else:
                    for w in graph[v]:
                        if w in allowed:
                            bmap.setdefault(w, set()).add(v)
                path.pop()
                if work:
                    pv, pit, pclosed = work[-1]
                    work[-1] = (pv, pit, pclosed or closed)
    found.sort(key=lambda c: (len(c), c))
    return found, True


# ---------------------------------------------------------------- output

def lib_name(base):
    path = os.path.join(base, "Cargo.toml")
    with open(path, "rb") as f:
        data = f.read()
    if tomllib:
        cargo = tomllib.loads(data.decode())
        name = cargo.get("lib", {}).get("name") or cargo.get("package", {}).get("name", "")
    else:
        text = data.decode()
        m = re.search(r'^\[lib\][^\[]*?^name\s*=\s*"([^"]+)"', text, re.M | re.S) or \
            re.search(r'^\[package\][^\[]*?^name\s*=\s*"([^"]+)"', text, re.M | re.S)
        name = m.group(1) if m else ""
    return name.replace("-", "_")


def dot(edges, loop_edges):
    out = ["digraph imports {", "  rankdir=LR;", '  node [shape=box, fontname="monospace"];']
    by_dir = {}
    for f in sorted(edges):
        by_dir.setdefault(os.path.dirname(f), []).append(f)
    for k, (d, files) in enumerate(sorted(by_dir.items())):
        out.append(f'  subgraph "cluster_{k}" {{')
        out.append(f'    label="{d}/";')
        for f in files:
            out.append(f'    "{f}" [label="{os.path.basename(f)}"];')
        out.append("  }")
    for a in sorted(edges):
        for b in sorted(edges[a]):
            attr = " [color=red, penwidth=2]" if (a, b) in loop_edges else ""
            out.append(f'  "{a}" -> "{b}"{attr};')
    out.append("}")
    return "\n".join(out)


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends quietly
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--dot", action="store_true", help="a Graphviz graph (loops' edges red)")
    mode.add_argument("--check", action="store_true",
                      help="only the loops and the count of files and edges")
    ap.add_argument("--src", default=os.path.join(ROOT, "src"), help="the source folder (src/)")
    ap.add_argument("--max-loops", type=int, default=1000,
                    help="stop listing loops after this many (default 1000)")
    args = ap.parse_args()

    src = os.path.abspath(args.src)
    g = Graph(src, lib_name(os.path.dirname(src)))
    g.load()
    edges = g.edges()
    loops, complete = cycles(edges, args.max_loops)
    comps = [c for c in components(edges) if len(c) > 1]
    in_comp = {f: k for k, c in enumerate(comps) for f in c}
    loop_edges = {(a, b) for a in edges for b in edges[a]
                  if a in in_comp and in_comp.get(b) == in_comp[a]}
    nedges = sum(len(v) for v in edges.values())

    if args.dot:
        print(dot(edges, loop_edges))
        return 1 if loops else 0
    if not args.check:
        for f in sorted(edges):
            targets = ", ".join(sorted(edges[f])) or "(nothing)"
            print(f"{f} -> {targets}")
        for f, why in sorted(g.left_out):
            print(f"# left out: {f} ({why})")
    for c in loops:
        print("loop: " + " -> ".join(c))
    if not complete:
        print(f"... stopped after {len(loops)} loops (--max-loops)")
    if args.check:
        print(f"{len(edges)} files, {nedges} edges, {len(loops)}{'' if complete else '+'} loops"
              f" in {len(comps)} tangles")
    elif not loops:
        print("no loop")
    else:
        print(f"{len(loops)}{'' if complete else '+'} loops in {len(comps)} tangles: "
              + "; ".join(" ".join(c) for c in comps))
    return 1 if loops else 0


if __name__ == "__main__":
    sys.exit(main())
