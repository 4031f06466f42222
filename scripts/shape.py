#!/usr/bin/env python3
"""The shape of lib/ and cmd/ (docs/style.md, "Shape"), checked on every .c and .h in them:

- a file is at most max_file_lines long;
- a function is at most max_function_lines long, counted from the first line of its definition
  (where its return type starts) to the line of its closing brace, both included;
- the modules of lib/ include each other without a cycle, of any length. A module is
  folder/stem with a trailing "_internal" dropped (x.c, x.h and x_internal.h are one module), and
  module M uses module N when a file of M includes a header of N;
- a file opens with what it is for: line 1 is the SPDX line, line 2 opens a block comment ("/*"
  in column 0) that holds at least min_purpose_words words (runs of letters) and that nothing but
  blanks follows on the line that closes it.

The numbers live in scripts/shape.conf, beside this script. Functions are found on the text with
comments, string and character literals and preprocessor lines blanked out, by counting braces:
a brace that opens at file level starts a function body when what stands before it since the
last ';', '}', preprocessor line or blank line ends in ')' and holds no '=' outside parentheses,
so prototypes, struct and enum definitions and initialisers are not taken for functions.

Usage: scripts/shape.py [ROOT]   (ROOT defaults to the checkout; tests/lint plants breaches in a
copy). Prints each breach as FILE:LINE: message; exits 1 if there is any.
"""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CONF = os.path.join(HERE, "shape.conf")


def read_conf(path):
    conf = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                key, _, value = line.partition("=")
                conf[key.strip()] = int(value.strip())
    return conf


def strip(text):
    """Two copies of text of the same length and lines: comments blanked, and comments, string
    and character literals blanked (their quotes kept)."""
    nocomment, code = [], []
    i, n = 0, len(text)

    def put(ch_nc, ch_code):
        nocomment.append(ch_nc)
        code.append(ch_code)

    while i < n:
        c = text[i]
        two = text[i : i + 2]
        if two == "/*":
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            for ch in text[i:end]:
                blank = "\n" if ch == "\n" else " "
                put(blank, blank)
            i = end
        elif two == "//":
            while i < n and text[i] != "\n":
                # a backslash before the newline continues a line comment
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    put(" ", " ")
                    put("\n", "\n")
                    i += 2
                    continue
                put(" ", " ")
                i += 1
        elif c in "\"'":
            put(c, c)
            i += 1
            while i < n and text[i] != c:
                if text[i] == "\\" and i + 1 < n:
                    put(text[i], " ")
                    put(text[i + 1], "\n" if text[i + 1] == "\n" else " ")
                    i += 2
                    continue
                if text[i] == "\n":  # an unterminated literal ends at the line
                    break
                put(text[i], " ")
                i += 1
            if i < n and text[i] == c:
                put(c, c)
                i += 1
        else:
            put(c, c)
            i += 1
    return "".join(nocomment), "".join(code)


def preprocessor_lines(lines):
    """Indexes of the lines that belong to a preprocessor directive, continuations included."""
    pp, cont = set(), False
    for idx, line in enumerate(lines):
        if cont or line.lstrip().startswith("#"):
            pp.add(idx)
            cont = line.rstrip().endswith("\\")
    return pp


def looks_like_function(header):
    """Whether the text before a file-level '{' is a function's declarator."""
    h = header.strip()
    if not h.endswith(")"):
        return False
    depth = 0
    for ch in h:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "=" and depth == 0:
            return False
    return True


def function_name(header):
    for m in re.finditer(r"([A-Za-z_]\w*)\s*\(", header):
        if not m.group(1).startswith("__attribute"):
            return m.group(1)
    return "?"


def check_functions(path, code_lines, max_lines, breach):
    pp = preprocessor_lines(code_lines)
    depth = paren = 0
    start = None  # line number where the current file-level declaration starts
    header = ""
    body = None  # (start line, name) of the function whose body is open
    for idx, line in enumerate(code_lines):
        lineno = idx + 1
        if idx in pp:
            if depth == 0:
                start, header, paren = None, "", 0
            continue
        for ch in line:
            if depth == 0:
                if ch == "{":
                    if start is not None and looks_like_function(header):
                        body = (start, function_name(header))
                    else:
                        body = None
                    depth = 1
                    continue
                if ch == "}":
                    breach(path, lineno, "a '}' closes nothing: the braces do not balance")
                    return
                if start is None and not ch.isspace():
                    start = lineno
                if ch == "(":
                    paren += 1
                elif ch == ")":
                    paren = max(paren - 1, 0)
                if ch == ";" and paren == 0:
                    start, header = None, ""
                    continue
                if start is not None:
                    header += ch
            elif ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    if body is not None:
                        n = lineno - body[0] + 1
                        if n > max_lines:
                            breach(
                                path,
                                body[0],
                                f"function {body[1]} is {n} lines, over the limit of "
                                f"{max_lines} (scripts/shape.conf): cut it into steps",
                            )
                    start, header, paren, body = None, "", 0, None
        if depth == 0 and paren == 0 and not line.strip():
            start, header = None, ""
        if depth == 0 and start is not None:
            header += "\n"
    if depth != 0:
        breach(path, len(code_lines), "a '{' is never closed: the braces do not balance")


def check_purpose(path, lines, min_words, breach):
    if not lines or not lines[0].startswith("/* SPDX-License-Identifier:"):
        breach(path, 1, "line 1 is not the SPDX line (/* SPDX-License-Identifier: ... */)")
    why = (
        "does not open with a comment saying what the file is for (line 2 opens a block comment"
        f" of at least {min_words} words, closed before any code)"
    )
    if len(lines) < 2 or not lines[1].startswith("/*"):
        breach(path, 2, why)
        return
    text = lines[1][2:]
    idx = 1
    while "*/" not in text:
        idx += 1
        if idx >= len(lines):
            breach(path, 2, why + ": it is never closed")
            return
        text += "\n" + lines[idx]
    inside, _, after = text.partition("*/")
    if after.strip():
        breach(path, idx + 1, why + ": code follows it on the line that closes it")
    elif len(re.findall(r"[A-Za-z]+", inside)) < min_words:
        breach(path, 2, why)


def module_of(path):
    """lib/FOLDER/STEM[_internal].EXT -> FOLDER/STEM"""
    folder, base = os.path.split(path)
    stem = os.path.splitext(base)[0]
    if stem.endswith("_internal"):
        stem = stem[: -len("_internal")]
    return os.path.relpath(os.path.join(folder, stem), "lib")


def find_cycle(scc, edges):
    """One cycle through the first module of the strongly connected scc: [m0, m1, ..., m0]."""
    first = scc[0]
    prev = {first: None}
    queue = [first]
    while queue:
        v = queue.pop(0)
        for w in sorted(edges.get(v, {})):
            if w not in scc:
                continue
            if w == first:
                path = [v]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                return [first] + list(reversed(path[:-1])) + [first] if v != first else [v, v]
            if w not in prev:
                prev[w] = v
                queue.append(w)
    return scc + [first]


def strongly_connected(nodes, edges):
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        # iterative Tarjan, so a long chain cannot hit the recursion limit
        work = [(v, iter(sorted(edges.get(v, {}))))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        while work:
            u, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, {})))))
                elif w in on:
                    low[u] = min(low[u], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[u])
            if low[u] == index[u]:
                comp = []
                while True:
                    x = stack.pop()
                    on.discard(x)
                    comp.append(x)
                    if x == u:
                        break
                out.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..")
    conf = read_conf(CONF)
    os.chdir(root)
    breaches = []

    def breach(path, line, msg):
        breaches.append(f"{path}:{line}: {msg}")

    files = []
    for top in ("lib", "cmd"):
        for d, _, names in os.walk(top):
            files += [os.path.join(d, f) for f in names if f.endswith((".c", ".h"))]
    edges = {}  # module -> {module it uses: (file, line) of the first include that says so}
    for path in sorted(files):
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        if len(lines) > conf["max_file_lines"]:
            breach(
                path,
                conf["max_file_lines"] + 1,
                f"{len(lines)} lines, over the limit of {conf['max_file_lines']}"
                " (scripts/shape.conf): cut it by concern",
            )
        check_purpose(path, lines, conf["min_purpose_words"], breach)
        nocomment, code = strip(text)
        check_functions(path, code.split("\n"), conf["max_function_lines"], breach)
        if not path.startswith("lib/"):
            continue
        m = module_of(path)
        edges.setdefault(m, {})
        for idx, line in enumerate(nocomment.split("\n")):
            inc = re.match(r'\s*#\s*include\s*"([^"]+\.h)"', line)
            if not inc:
                continue
            target = inc.group(1)
            if "/" not in target:  # layers.sh refuses it; here it is the file's own folder
                target = os.path.join(os.path.dirname(path), target)
            else:
                target = os.path.join("lib", target)
            n = module_of(os.path.normpath(target))
            if n != m:
                edges[m].setdefault(n, (path, idx + 1))

    for scc in strongly_connected(edges.keys(), edges):
        if len(scc) < 2:
            continue
        cycle = find_cycle(scc, edges)
        path, line = edges[cycle[0]][cycle[1]]
        breach(
            path,
            line,
            f"include cycle among the modules {', '.join(scc)}: {' -> '.join(cycle)}"
            " (a module includes nothing that includes it back)",
        )

    for b in breaches:
        print(b)
    if breaches:
        print(f"shape: {len(breaches)} breach(es), see docs/style.md", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
