#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The gateway's shape (issue #11): no circle of files in gateway/ (calls,
or headers including each other), no file over MAX_FILE_LINES, no
function over MAX_FUNC_LINES.

  check-shape.py LIBSL_GW_A GATEWAY_SRC_DIR

The file graph comes from the built objects, not from reading the C: nm
gives each object's undefined symbols and every other object's defined
ones; a file calls another when it uses a symbol the other defines. A
strongly connected component of more than one file is a circle, named with
one cycle through it and the symbols that make each arrow.

Functions are found as the code is written (kernel style): a function body
opens with "{" alone in column 0 after its signature and closes with "}"
alone in column 0; its length is the lines from the one to the other,
both included.
"""
import os
import re
import subprocess
import sys

MAX_FILE_LINES = 800
MAX_FUNC_LINES = 80


def file_graph(archive):
    out = subprocess.run(['nm', '-A', archive], check=True, capture_output=True,
                         text=True).stdout
    defined, undefined = {}, {}
    for line in out.splitlines():
        # "lib.a:member.o:                 U sym" or "...:0000000000000000 T sym"
        m = re.match(r'^[^:]*:([^:]+\.o):\s*(?:[0-9a-fA-F]+\s+)?([A-Za-z])\s+(\S+)$', line)
        if not m:
            continue
        obj, kind, sym = m.groups()
        name = os.path.basename(obj)[:-2]
        if name.endswith('.c'):
            name = name[:-2]
        defined.setdefault(name, set())
        undefined.setdefault(name, set())
        if kind == 'U':
            undefined[name].add(sym)
        elif kind.isupper():
            defined[name].add(sym)
    owner = {}
    for name, syms in defined.items():
        for s in syms:
            owner[s] = name
    edges = {n: {} for n in defined}
    for name, syms in undefined.items():
        for s in syms:
            o = owner.get(s)
            if o and o != name:
                edges[name].setdefault(o, set()).add(s)
    return edges


def sccs(edges):
    """Tarjan's, iteratively (no recursion limit to meet)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges[w]))))
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
                out.append(sorted(comp))
    return out


def one_cycle(edges, comp):
    """A shortest cycle through the component's first file (BFS back to it)."""
    members = set(comp)
    start = comp[0]
    prev = {start: None}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(edges[v]):
            if w not in members:
                continue
            if w == start:
                path = [v]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                path.reverse()
                return path + [start]
            if w not in prev:
                prev[w] = v
                queue.append(w)
    return comp


def include_graph(src):
    """gateway/'s headers: which includes which (#include "x.h" of a header
    that lives there). The objects' graph above covers what calls what; a
    circle of headers is one the preprocessor hides behind #pragma once."""
    edges = {}
    for name in sorted(os.listdir(src)):
        if not name.endswith('.h'):
            continue
        edges.setdefault(name, {})
        with open(os.path.join(src, name), encoding='utf-8') as f:
            for line in f:
                m = re.match(r'\s*#\s*include\s+"([^"/]+\.h)"', line)
                if m and os.path.exists(os.path.join(src, m.group(1))) and m.group(1) != name:
                    edges[name].setdefault(m.group(1), set()).add('#include')
    for e in list(edges.values()):
        for b in e:
            edges.setdefault(b, {})
    return edges


def long_functions(path):
    with open(path, encoding='utf-8') as f:
        lines = f.read().split('\n')
    found = []
    start = None
    for i, line in enumerate(lines):
        if line == '{' and start is None:
            start = i
        elif line == '}' and start is not None:
            n = i - start + 1
            if n > MAX_FUNC_LINES:
                name = '?'
                for j in range(start - 1, max(start - 6, -1), -1):
                    m = re.search(r'(\w+)\s*\(', lines[j])
                    if m:
                        name = m.group(1)
                        break
                found.append((name, start + 1, n))
            start = None
    return found, len(lines) - (1 if lines and lines[-1] == '' else 0)


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().split('\n\n')[1], file=sys.stderr)
        return 2
    archive, src = sys.argv[1], sys.argv[2]
    failed = False

    edges = file_graph(archive)
    if not edges:
        print(f'{archive}: no objects found by nm', file=sys.stderr)
        return 1
    for comp in sccs(edges):
        if len(comp) < 2:
            continue
        failed = True
        cyc = one_cycle(edges, comp)
        print(f'circle of files in gateway/: {{{", ".join(comp)}}}')
        print('  for example ' + ' -> '.join(cyc) + ':')
        for a, b in zip(cyc, cyc[1:]):
            print(f'    {a} -> {b}: {", ".join(sorted(edges[a][b]))}')

    hedges = include_graph(src)
    for comp in sccs(hedges):
        if len(comp) < 2:
            continue
        failed = True
        print(f'circle of headers in gateway/: {" -> ".join(one_cycle(hedges, comp))}')

    for name in sorted(os.listdir(src)):
        if not name.endswith('.c'):
            continue
        path = os.path.join(src, name)
        funcs, n = long_functions(path)
        if n > MAX_FILE_LINES:
            failed = True
            print(f'gateway/{name}: {n} lines, over {MAX_FILE_LINES}')
        for fn, line, k in funcs:
            failed = True
            print(f'gateway/{name}:{line}: {fn}() is {k} lines, over {MAX_FUNC_LINES}')

    if not failed:
        print(f'gateway/: {len(edges)} files, no circle, none over {MAX_FILE_LINES} lines, '
              f'no function over {MAX_FUNC_LINES}')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
