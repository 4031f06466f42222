#!/usr/bin/env python3
"""The README's Layout table says what the tree is: check that it does.

Every lib/ folder has a row whose "may use" list is exactly its rule in scripts/layers.sh, in the
same order of floors; every module the table names exists in that folder; every file in lib/ is
named by some row of its folder. Usage: scripts/layout_readme.py [ROOT]. Prints each mismatch;
exits 1 if there is any.
"""
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
errors = []

with open(os.path.join(root, "scripts/layers.sh")) as f:
    layers = f.read()
block = re.search(r"declare -A may_use=\((.*?)\n\)", layers, re.S)
rules = {}
for name, uses in re.findall(r'\[(\w+)\]="([^"]*)"', block.group(1) if block else ""):
    rules[name] = uses.split()
if not rules:
    errors.append("scripts/layers.sh: no may_use table found")

with open(os.path.join(root, "README.md")) as f:
    readme = f.read()
m = re.search(r"^## Layout\n(.*?)(?=^## |\Z)", readme, re.S | re.M)
section = m.group(1) if m else ""
if not section:
    errors.append("README.md: no '## Layout' section")

table = {}  # folder -> (may use, [module cells])
folder = None
for line in section.splitlines():
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if not line.startswith("|"):
        folder = None
        continue
    if len(cells) != 4 or all(c and set(c) <= set("-:") for c in cells):
        continue
    first = re.fullmatch(r"`lib/(\w+)/`", cells[0])
    if first:
        folder = first.group(1)
        uses = re.findall(r"`(\w+)`", cells[1])
        table[folder] = (uses, [])
    elif cells[0] or folder is None:
        continue
    table[folder][1].append(cells[2])

for name in rules:
    if name not in table:
        errors.append(f"README.md Layout: no row for lib/{name}/")
order = list(rules)
for name, (uses, mods) in table.items():
    if name not in rules:
        errors.append(f"README.md Layout: lib/{name}/ has no rule in scripts/layers.sh")
        continue
    if uses != rules[name]:
        errors.append(f"README.md Layout: lib/{name}/ may use {uses or 'nothing'}, "
                      f"scripts/layers.sh says {rules[name] or 'nothing'}")
    if list(table).index(name) != order.index(name):
        errors.append(f"README.md Layout: lib/{name}/ is not on the floor scripts/layers.sh "
                      f"puts it on (row {list(table).index(name) + 1}, rule {order.index(name) + 1})")
    d = os.path.join(root, "lib", name)
    present = set(os.listdir(d)) if os.path.isdir(d) else set()
    named = set()
    for cell in mods:
        for mod in re.findall(r"`([\w.]+)`", cell):
            files = [mod] if mod.endswith((".c", ".h")) else [mod + ".c", mod + ".h"]
            found = [x for x in files if x in present]
            if not found:
                errors.append(f"README.md Layout: lib/{name}/{mod} does not exist")
            named.update(found)
    for fname in sorted(present - named):
        errors.append(f"README.md Layout: lib/{name}/{fname} is in the tree but in no row")

for e in errors:
    print(e)
if not errors:
    print("layout: the README's Layout table matches scripts/layers.sh and the tree")
sys.exit(1 if errors else 0)
