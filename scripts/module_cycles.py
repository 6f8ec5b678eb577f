#!/usr/bin/env python3
"""Fails when modules of a workspace crate import each other, directly or around a circle.

Usage:
    python3 scripts/module_cycles.py [ROOT]     check every crate under ROOT (default: the repo)
    python3 scripts/module_cycles.py --self-test

For each crate (a folder with `Cargo.toml` and `src/`), the module tree is read from `src/lib.rs`,
`src/main.rs` and `src/bin/*.rs` by following `mod name;` declarations (with `#[path = "…"]`).
A module depends on another when its code names it: `crate::a::b…`, `super::…`, `self::…`
paths, including grouped imports (`use crate::{a::X, b};`), and names the crate root re-exports
(`crate::Config` when `lib.rs` has `pub use config::Config`). Comments, string literals and
`#[cfg(test)]` items are not read: tests may reach anywhere. An edge between a module and one
of its own ancestors or descendants does not count (a parent declares and re-exports its
children). Every strongly connected group of two or more modules is printed.

The layer order is checked too, for every crate that `ARCHITECTURE.md` (at ROOT) gives a table
in a fenced block opened with ```` ```layers <crate>/src ````, one line per layer from the bottom
up: `<number> <title>: <module> <module> …`. A module belongs to the layer that lists it or its
nearest listed ancestor (`call` covers `call::hold`). Every module must be in the table, every
listed module must exist, and a module may import only from its own layer or a lower one; each
import from a higher layer is printed with both layers. The exit status is 1 when there is any
cycle or layer fault.
"""
import os
import re
import sys
import tempfile

SKIP_DIRS = {"target", "node_modules", ".git", "tests", "benches", "examples", "ui"}
IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def crate_src_dirs(root):
    for dp, dn, fn in os.walk(root):
        dn[:] = sorted(d for d in dn if d not in SKIP_DIRS)
        if "Cargo.toml" in fn and os.path.isdir(os.path.join(dp, "src")):
            yield os.path.join(dp, "src")


def strip_code(text):
    """Removes comments, string and char literals (keeping line structure irrelevant)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        elif c == "r" and re.match(r'r#*"', text[i:i + 10]) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            hashes = re.match(r'r(#*)"', text[i:]).group(1)
            end = text.find('"' + hashes, i + 2 + len(hashes))
            out.append('""')
            i = n if end < 0 else end + 1 + len(hashes)
        elif c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            out.append('""')
            i += 1
        elif c == "'" and re.match(r"'(\\.|[^\\'])'", text[i:i + 4] if text[i + 1:i + 2] != "\\" else text[i:i + 12]):
            m = re.match(r"'(\\[^']*|[^\\'])'", text[i:])
            out.append("' '")
            i += len(m.group(0))
        else:
            out.append(c)
            i += 1
    return "".join(out)


def matching_brace(text, start):
    """Index just past the `}` matching the `{` at `start`."""
    depth = 0
    for j in range(start, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return j + 1
    return len(text)


def drop_cfg_test(text):
    """Removes items under `#[cfg(test)]` (a `mod … { }` block, a `mod x;` or a single item)."""
    while True:
        m = re.search(r"#\[cfg\(test\)\]", text)
        if not m:
            return text
        j = m.end()
        brace, semi = text.find("{", j), text.find(";", j)
        if brace >= 0 and (semi < 0 or brace < semi):
            end = matching_brace(text, brace)
        else:
            end = len(text) if semi < 0 else semi + 1
        text = text[:m.start()] + text[end:]


def expand_paths(text):
    """Every `crate::…`, `super::…` and `self::…` path, with `{…}` groups expanded."""
    paths = []
    for m in re.finditer(r"\b(crate|super|self)((?:\s*::\s*" + IDENT + r")*)(\s*::\s*\{)?", text):
        if m.start() > 0 and text[m.start() - 1] in "$":
            continue  # `$crate` in macros is the crate root, seen from outside
        head = [m.group(1)] + re.findall(IDENT, m.group(2))
        if m.group(3):
            brace = m.end() - 1
            inner = text[brace + 1:matching_brace(text, brace) - 1]
            for tail in split_group(inner):
                paths.append(head + tail)
        else:
            paths.append(head)
    return paths


def split_group(inner):
    """`a::X, b::{c, d}, self` -> [[a, X], [b, c], [b, d], []]."""
    items, depth, cur = [], 0, ""
    for ch in inner:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            items.append(cur)
            cur = ""
        else:
            cur += ch
    items.append(cur)
    out = []
    for item in items:
        item = item.strip()
        if not item:
            continue
        g = re.match(r"((?:" + IDENT + r"\s*::\s*)*)\{(.*)\}$", item, re.S)
        if g:
            prefix = re.findall(IDENT, g.group(1))
            out += [prefix + t for t in split_group(g.group(2))]
        else:
            names = re.findall(IDENT, item.split(" as ")[0])
            out.append([] if names == ["self"] else names)
    return out


def module_tree(src):
    """{module path: file text} from the crate roots, following `mod x;` declarations."""
    files = {}
    roots = [("", os.path.join(src, f)) for f in ("lib.rs", "main.rs") if os.path.isfile(os.path.join(src, f))]
    bins = os.path.join(src, "bin")
    if os.path.isdir(bins):
        for f in sorted(os.listdir(bins)):
            if f.endswith(".rs"):
                roots.append(("bin::" + f[:-3], os.path.join(bins, f)))
    todo = [(name, path, True) for name, path in roots]
    seen = set()
    while todo:
        name, path, owns_dir = todo.pop()
        if (name, os.path.normpath(path)) in seen:
            continue
        seen.add((name, os.path.normpath(path)))
        text = open(path, encoding="utf-8", errors="replace").read()
        # The crate root of a lib + bin, or cfg twins (`#[cfg(…)] #[path = "…"] mod x;`) share a name.
        files[name] = files[name] + "\n" + text if name in files else text
        here = os.path.dirname(path)
        stem = os.path.splitext(os.path.basename(path))[0]
        child_dir = here if owns_dir or stem == "mod" else os.path.join(here, stem)
        code = drop_cfg_test(strip_code_keep_path(text))
        for m in re.finditer(r"((?:#\[[^\]]*\]\s*)*)(?:pub(?:\([^)]*\))?\s+)?mod\s+(" + IDENT + r")\s*;", code):
            attrs, child = m.group(1), m.group(2)
            full = child if not name else name + "::" + child
            pa = re.search(r'#\[\s*path\s*=\s*"([^"]+)"\s*\]', attrs)
            if pa:
                target = os.path.join(here, pa.group(1))
                todo.append((full, target, False)) if os.path.isfile(target) else None
                continue
            for cand, owns in ((os.path.join(child_dir, child + ".rs"), False), (os.path.join(child_dir, child, "mod.rs"), True)):
                if os.path.isfile(cand):
                    todo.append((full, cand, owns))
                    break
    return files


def strip_code_keep_path(text):
    """Comments removed, but string literals kept (for `#[path = "…"]`)."""
    text = re.sub(r"(?s)/\*.*?\*/", "", text)
    return re.sub(r"//[^\n]*", "", text)


def root_reexports(root_text):
    """{name: [module, path…]} for the crate root's `pub use a::b::{X, Y}` items."""
    names = {}
    code = drop_cfg_test(strip_code(root_text))
    for m in re.finditer(r"\bpub\s+use\s+([^;]*);", code):
        body = m.group(1).strip()
        if body.startswith("crate::"):
            body = body[len("crate::"):]
        for path in split_group("{" + body + "}") if not body.startswith("{") else split_group(body[1:-1]):
            if not path:
                continue
            alias = re.search(r"\bas\s+(" + IDENT + r")", body)
            names[path[-1]] = path
            if alias and len(split_group(body)) == 1:
                names[alias.group(1)] = path
    return names


def resolve(parts, mods):
    for i in range(len(parts), 0, -1):
        cand = "::".join(parts[:i])
        if cand in mods:
            return cand
    return None


def edges_of(src):
    files = module_tree(src)
    mods = set(files)
    reexports = root_reexports(files.get("", ""))
    edges = {m: set() for m in mods}
    for m, text in files.items():
        code = drop_cfg_test(strip_code(text))
        for path in expand_paths(code):
            head, rest = path[0], path[1:]
            if head == "crate":
                parts = rest
                if parts and parts[0] not in mods and parts[0] in reexports:
                    parts = reexports[parts[0]] + parts[1:]
            else:  # `super` / `self`, possibly followed by more `super`s
                here = m.split("::") if m else []
                parts = here[:-1] if head == "super" else here
                while rest and rest[0] in ("super", "self"):
                    parts = parts[:-1] if rest[0] == "super" else parts
                    rest = rest[1:]
                parts = parts + rest
            target = resolve(parts, mods)
            if target is None or target == "" or target == m:
                continue
            if target.startswith(m + "::") or m.startswith(target + "::") or m == "":
                continue
            edges[m].add(target)
    return edges


def cycles(edges):
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def report(comp, edges):
    inside = set(comp)
    lines = [f"  {a} -> {b}" for a in comp for b in sorted(edges[a]) if b in inside]
    return "\n".join(lines)


def check(root, out=sys.stdout):
    total = 0
    for src in sorted(crate_src_dirs(root)):
        edges = edges_of(src)
        for comp in cycles(edges):
            total += 1
            print(f"{os.path.relpath(src, root)}: {len(comp)} modules import each other: {', '.join(comp)}", file=out)
            print(report(comp, edges), file=out)
    print(f"module import cycles: {total}", file=out)
    return total


LAYERS_FENCE = re.compile(r"^```layers[ \t]+(\S+)[ \t]*\n(.*?)^```", re.M | re.S)


def layer_tables(root):
    """{src dir relative to root: [(number, title, [module…])]} from `ARCHITECTURE.md`."""
    path = os.path.join(root, "ARCHITECTURE.md")
    if not os.path.isfile(path):
        return {}
    text = open(path, encoding="utf-8").read()
    return {os.path.normpath(m.group(1)): layer_rows(m.group(2)) for m in LAYERS_FENCE.finditer(text)}


def layer_rows(block):
    """`1 leaves: a b` lines -> [(1, "leaves", ["a", "b"])]."""
    rows = []
    for line in block.splitlines():
        line = line.strip()
        if not line:
            continue
        row = re.match(r"(\d+)\s+([^:]+):(.*)$", line)
        if not row:
            raise ValueError(f"ARCHITECTURE.md: bad layer line {line!r} (want `<number> <title>: <module> …`)")
        rows.append((int(row.group(1)), row.group(2).strip(), row.group(3).split()))
    return rows


def layer_faults(edges, rows):
    """Every fault of a crate's modules against its layer table, as text lines."""
    layer_of, title, faults = {}, {}, []
    for number, name, mods in rows:
        title[number] = name
        for mod in mods:
            if mod in layer_of:
                faults.append(f"`{mod}` is listed in two layers")
            layer_of[mod] = number
    mods = {m for m in edges if m != ""}
    for listed in sorted(layer_of):
        if listed not in mods:
            faults.append(f"`{listed}` is in the layer table but is no module of the crate")

    def layer(mod):
        parts = mod.split("::")
        for i in range(len(parts), 0, -1):
            got = layer_of.get("::".join(parts[:i]))
            if got is not None:
                return got
        return None

    for mod in sorted(mods):
        if layer(mod) is None:
            faults.append(f"`{mod}` is in no layer: add it to the table in ARCHITECTURE.md")
    for mod in sorted(mods):
        here = layer(mod)
        for target in sorted(edges[mod]):
            there = layer(target) if target else None
            if here is not None and there is not None and there > here:
                faults.append(
                    f"`{mod}` (layer {here}, {title[here]}) imports `{target}` "
                    f"(layer {there}, {title[there]}): a module imports only from its own layer or below"
                )
    return faults


def check_layers(root, out=sys.stdout):
    total = 0
    for rel, rows in sorted(layer_tables(root).items()):
        src = os.path.join(root, rel)
        if not os.path.isdir(src):
            print(f"ARCHITECTURE.md: layer table for `{rel}`, which is no folder", file=out)
            total += 1
            continue
        faults = layer_faults(edges_of(src), rows)
        for fault in faults:
            print(f"{rel}: {fault}", file=out)
        total += len(faults)
    print(f"module layer faults: {total}", file=out)
    return total


def self_test():
    import io

    def crate(tmp, name, files):
        base = os.path.join(tmp, name)
        os.makedirs(os.path.join(base, "src"))
        open(os.path.join(base, "Cargo.toml"), "w").write(f'[package]\nname = "{name}"\n')
        for rel, text in files.items():
            p = os.path.join(base, "src", rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            open(p, "w").write(text)
        return os.path.join(base, "src")

    failures = []

    def expect(cond, what):
        if not cond:
            failures.append(what)

    with tempfile.TemporaryDirectory() as tmp:
        # Acyclic: grouped imports, super, #[path], re-exports, a test module reaching up.
        ok = crate(tmp, "layered", {
            "lib.rs": 'mod ids;\nmod event;\n#[path = "twin.rs"]\npub mod api;\nmod call;\npub use ids::RunId;\n',
            "ids.rs": "pub struct RunId;\n#[cfg(test)]\nmod tests { use crate::api::Api; }\n",
            "event.rs": "use crate::{RunId, ids};\n// crate::api::Api in a comment\nconst S: &str = \"crate::api\";\npub struct Ev(RunId);\n",
            "twin.rs": "use crate::event::Ev;\npub struct Api;\n",
            "call/mod.rs": "pub(crate) mod inner;\npub struct Call;\n",
            "call/inner.rs": "use super::Call;\nuse crate::ids::RunId;\n",
        })
        e = edges_of(ok)
        expect(e.get("event") == {"ids"}, f"event edges {e.get('event')}")
        expect(e.get("api") == {"event"}, f"api edges {e.get('api')} (#[path] module)")
        expect(e.get("call::inner") == {"ids"}, f"call::inner edges {e.get('call::inner')}")
        expect(e.get("ids") == set(), f"ids edges {e.get('ids')} (cfg(test) must not count)")
        expect(cycles(e) == [], f"layered crate has cycles {cycles(e)}")
        # Cyclic: a direct pair through a grouped import, and a circle of three through a re-export.
        bad = crate(tmp, "circular", {
            "lib.rs": "mod a;\nmod b;\nmod c;\nmod d;\npub use c::Thing;\n",
            "a.rs": "use crate::{b::B, c};\npub struct A;\n",
            "b.rs": "pub struct B;\nfn f() -> crate::a::A { todo!() }\n",
            "c.rs": "pub struct Thing;\nuse self::super::d::D;\n",
            "d.rs": "pub struct D(crate::Thing);\nuse crate::a::A;\n",
        })
        comps = cycles(edges_of(bad))
        expect(comps == [["a", "b", "c", "d"]], f"circular crate cycles {comps}")
        buf = io.StringIO()
        n = check(tmp, buf)
        expect(n == 1, f"check over both crates found {n} cycles:\n{buf.getvalue()}")
        expect("circular/src: 4 modules import each other: a, b, c, d" in buf.getvalue(), buf.getvalue())
        expect("  d -> a" in buf.getvalue(), "report names the edges")
        # Layers: a table over a small crate, then the same crate with an upward import,
        # a module missing from the table and a stale entry.
        def layered(name, extra):
            files = {
                "lib.rs": 'mod ids;\nmod event;\nmod call;\npub mod api;\n#[cfg(not(feature = "on"))]\n#[path = "off/api.rs"]\npub mod api;\n',
                "ids.rs": "pub struct Id;\n",
                "event.rs": "use crate::ids::Id;\npub struct Ev(Id);\n",
                "call/mod.rs": "mod hold;\npub struct Call;\n",
                "call/hold.rs": "use crate::event::Ev;\nuse super::Call;\n",
                "api.rs": "use crate::call::Call;\n",
                "off/api.rs": "use crate::ids::Id;\n",
            }
            files.update(extra)
            return crate(os.path.join(tmp, "layers"), name, files)

        table = "1 leaves: ids\n2 event data: event\n3 call: call\n4 public api: api\n"
        good = layered("good", {})
        faults = layer_faults(edges_of(good), layer_rows(table))
        expect(faults == [], f"layered crate has layer faults {faults}")
        expect("ids" in edges_of(good)["api"], "a cfg twin mounted through #[path] is read too")
        upward = layered("upward", {
            "ids.rs": "pub struct Id;\nfn f(_: crate::event::Ev) {}\n",
            "call/hold.rs": "use crate::{api, event::Ev};\nuse super::Call;\n",
            "lib.rs": 'mod ids;\nmod event;\nmod call;\npub mod api;\nmod stray;\n',
            "stray.rs": "\n",
        })
        arch = "# Architecture\n\n```layers good/src\n" + table + "```\n\n```layers upward/src\n" + table + "9 gone: missing\n```\n"
        open(os.path.join(tmp, "layers", "ARCHITECTURE.md"), "w").write(arch)
        buf = io.StringIO()
        n = check_layers(os.path.join(tmp, "layers"), buf)
        got = buf.getvalue()
        expect(n == 4, f"layer check found {n} faults, want 4:\n{got}")
        expect("upward/src: `ids` (layer 1, leaves) imports `event` (layer 2, event data)" in got, got)
        expect("upward/src: `call::hold` (layer 3, call) imports `api` (layer 4, public api)" in got, got)
        expect("upward/src: `stray` is in no layer" in got, got)
        expect("upward/src: `missing` is in the layer table but is no module of the crate" in got, got)
        expect("good/src" not in got, got)
    if failures:
        print("self-test failed:\n- " + "\n- ".join(failures))
        return 1
    print("self-test passed")
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        sys.exit(self_test())
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    faults = check(root) + check_layers(root)
    sys.exit(1 if faults else 0)
