#!/usr/bin/env python3
"""What the OpenTelemetry agent is made of, from its NuGet lock file (profiler/otel-agent).

Usage: packages_tsv.py LOCKFILE AGENT_DIR. Prints one line a package, tab-separated: name,
version, direct or transitive, whether its assembly is shipped in AGENT_DIR (yes/no: the framework's
System.Diagnostics.DiagnosticSource is the app's), its licence (the SPDX expression of its nuspec in
the NuGet cache that restored it, NUGET_PACKAGES or ~/.nuget/packages; "?" if none is there), and
the lock file's SHA-512 of the package, for `clrattach version` and the SBOM. The first line names
the columns.
"""
import json
import os
import re
import sys


def licence(name, version):
    cache = os.environ.get("NUGET_PACKAGES") or os.path.expanduser("~/.nuget/packages")
    lower = name.lower()
    try:
        with open(os.path.join(cache, lower, version.lower(), lower + ".nuspec")) as f:
            m = re.search(r'<license type="expression">([^<]+)</license>', f.read())
    except OSError:
        return "?"
    return m.group(1) if m else "?"


def main():
    lock_path, agent_dir = sys.argv[1], sys.argv[2]
    with open(lock_path) as f:
        lock = json.load(f)
    rows = {}
    for deps in lock.get("dependencies", {}).values():
        for name, d in deps.items():
            if d.get("type") not in ("Direct", "Transitive", "CentralTransitive"):
                continue
            shipped = os.path.exists(os.path.join(agent_dir, name + ".dll"))
            version = d.get("resolved", "?")
            rows[name] = (version, d["type"].lower(), "yes" if shipped else "no", licence(name, version),
                          d.get("contentHash", ""))
    print("package\tversion\ttype\tshipped\tlicense\tsha512")
    for name in sorted(rows, key=str.lower):
        print(name + "\t" + "\t".join(rows[name]))


if __name__ == "__main__":
    main()
