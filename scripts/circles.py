#!/usr/bin/env python3
# Usage: python3 scripts/circles.py .   (issue 55 asks for at most 5 circles, none over 6 files)
"""Import circles between source files of each workspace crate: a file names another through
`crate::a::b` / `super::x` paths (and `use crate::{a, b}` groups); strongly connected groups of more
than one file are circles. Prints each crate's circles and their sizes."""
import os, re, sys
root = sys.argv[1]
def crates():
    for base in ['crates', '.']:
        for d in sorted(os.listdir(os.path.join(root, base))):
            src = os.path.join(root, base, d, 'src')
            if os.path.isdir(src) and (base == 'crates' or d == 'src-tauri'):
                yield d, src
def module_of(src, path):
    rel = os.path.relpath(path, src)[:-3].split('/')
    if rel[-1] in ('mod', 'lib', 'main'): rel = rel[:-1]
    return tuple(rel)
def split_top(text):
    out, depth, cur = [], 0, ''
    for ch in text:
        depth += (ch == '{') - (ch == '}')
        if ch == ',' and depth == 0: out.append(cur); cur = ''
        else: cur += ch
    return [x.strip() for x in out + [cur] if x.strip()]
def use_paths(tree, prefix=()):
    """The leaf paths of a use tree (`a::{b, c::{d, e}}`), each as a list of segments."""
    tree = tree.strip()
    g = re.match(r'^((?:\w+::)*)\{(.*)\}$', tree, re.S)
    if g:
        pre = tuple(x for x in g.group(1).split('::') if x)
        return [p for sub in split_top(g.group(2)) for p in use_paths(sub, prefix + pre)]
    parts = [x for x in tree.split(' as ')[0].strip().split('::') if x and x != 'self']
    return [list(prefix) + parts]
total = []
for name, src in crates():
    files = {}
    for r, _, fs in os.walk(src):
        for f in fs:
            if f.endswith('.rs'):
                p = os.path.join(r, f); files[module_of(src, p)] = p
    mods = set(files)
    # names the crate root re-exports (`pub use a::b::{C, D}` / `pub use a::C` in lib.rs or main.rs):
    # `crate::C` names the file that defines C, so a re-export does not hide an edge
    reexported = {}
    for rootfile in ('lib.rs', 'main.rs'):
        rp = os.path.join(src, rootfile)
        if not os.path.exists(rp): continue
        rtext = open(rp).read()
        for base, grp in re.findall(r'pub use ((?:[A-Za-z_][A-Za-z0-9_]*::)+)\{([^}]*)\}', rtext):
            for item in grp.split(','):
                item = item.strip().split(' as ')[-1].strip()
                if item: reexported[item.split('::')[-1]] = base.strip(':').split('::')
        for path in re.findall(r'pub use ((?:[A-Za-z_][A-Za-z0-9_]*::)+[A-Za-z_][A-Za-z0-9_]*)\s*;', rtext):
            parts = path.split('::'); reexported[parts[-1]] = parts[:-1]
    def resolve(parts):
        if parts and parts[0] in reexported and (parts[0],) not in mods:
            parts = reexported[parts[0]] + parts
        # longest prefix that is a module file
        for n in range(len(parts), 0, -1):
            if tuple(parts[:n]) in mods: return tuple(parts[:n])
        return None
    edges = {m: set() for m in mods}
    for m, p in files.items():
        text = open(p).read()
        text = re.sub(r'#\[cfg\(test\)\]\s*mod tests\s*\{.*', '', text, flags=re.S)
        for path in re.findall(r'\bcrate((?:::[A-Za-z_][A-Za-z0-9_]*)+)', text):
            t = resolve(path.strip(':').split('::'))
            if t and t != m: edges[m].add(t)
        # every path of a `use crate::…;` / `use super::…;` tree, groups nested at any depth
        for base, tree in re.findall(r'use (crate|super)::([^;]*);', text):
            for path in use_paths(tree):
                if base == 'crate': t = resolve(path)
                else: t = resolve(list(m[:-1]) + path)
                if t and t != m: edges[m].add(t)
        for path in re.findall(r'\bsuper((?:::[A-Za-z_][A-Za-z0-9_]*)+)', text):
            parent = list(m[:-1]) if not p.endswith('mod.rs') else list(m[:-1])
            t = resolve(parent + path.strip(':').split('::'))
            if t and t != m: edges[m].add(t)
    # Tarjan
    index, low, stack, on, out = {}, {}, [], set(), []
    sys.setrecursionlimit(10000)
    def sc(v):
        index[v] = low[v] = len(index); stack.append(v); on.add(v)
        for w in edges[v]:
            if w not in index: sc(w); low[v] = min(low[v], low[w])
            elif w in on: low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w == v: break
            if len(comp) > 1: out.append(comp)
    for v in mods:
        if v not in index: sc(v)
    for c in out:
        total.append((name, len(c), sorted('/'.join(x) or 'lib' for x in c)))
for name, n, c in sorted(total, key=lambda t: -t[1]):
    print(f"{name}: {n} files: {', '.join(c)}")
print(f"circles: {len(total)}, longest: {max((t[1] for t in total), default=0)}")
