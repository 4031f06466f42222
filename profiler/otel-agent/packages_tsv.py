#!/usr/bin/env python3
"""What the OpenTelemetry agent is made of, from its NuGet lock file (profiler/otel-agent).

Usage: packages_tsv.py LOCKFILE AGENT_DIR. Prints one line a package, tab-separated: name,
version, direct or transitive, whether its assembly is shipped in AGENT_DIR (yes/no: the framework's
System.Diagnostics.DiagnosticSource is the app's), and the lock file's SHA-512 of the package, for
`clrattach version` and the SBOM. The first line names the columns.
"""
import json
import os
import sys


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
            rows[name] = (d.get("resolved", "?"), d["type"].lower(), "yes" if shipped else "no",
                          d.get("contentHash", ""))
    print("package\tversion\ttype\tshipped\tsha512")
    for name in sorted(rows, key=str.lower):
        print(name + "\t" + "\t".join(rows[name]))


if __name__ == "__main__":
    main()
