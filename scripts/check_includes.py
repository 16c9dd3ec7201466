#!/usr/bin/env python3
"""Checks shardloader's dependency rule (stated in cpp/README.md).

Every file of cpp/shardloader/ belongs to a room; a room may include only the
rooms listed for it in ALLOWED below, so every include runs downhill. Also
checked: no two files include each other (directly or through a cycle), and
the public headers that CMakeLists.txt installs include only public headers.
bindings/ may include any room but engine/ and internal/, and only through
the dispatcher for storage (not io/local, io/remote, io/cache, io/output).

Usage: scripts/check_includes.py [REPO_ROOT]. Exit status 0 when the rule
holds, 1 with one line per violation otherwise.
"""
import pathlib
import re
import sys

# The rooms, from the ground floor up, and which rooms each may include.
# A room always may include itself.
CORE = ("status.h", "status.cc", "dtype.h", "dtype.cc", "stats.h", "stats.cc",
        "batch.h", "batch.cc")
OPTIONS = ("loader_options.h",)
FACADE = ("loader.h", "loader.cc", "shard_writer.h", "shard_writer.cc")

ALLOWED = {
    "internal": set(),
    "core": {"internal"},
    "io": {"core", "internal"},
    "io/local": {"io", "core", "internal"},
    "io/remote": {"io", "core", "internal"},
    "io/cache": {"io/local", "io/remote", "io", "core", "internal"},
    "io/output": {"io/remote", "io", "core", "internal"},
    "io/open": {"io/cache", "io/output", "io/local", "io/remote", "io", "core",
                "internal"},
    "format": {"io/open", "io", "core", "internal"},
    "plan": {"io/open", "io", "core", "internal"},
    "decode": {"core", "internal"},
    "options": {"decode", "plan", "io", "core"},
    "engine": {"options", "decode", "format", "plan", "io/open", "io", "core",
               "internal"},
    "facade": {"engine", "options", "decode", "format", "plan", "io/open", "io",
               "core", "internal"},
}
# Only loader.cc may include the engine.
ENGINE_INCLUDERS = {"loader.cc"}
BINDINGS_FORBIDDEN = {"engine", "internal", "io/local", "io/remote", "io/cache",
                      "io/output"}

INCLUDE = re.compile(r'^\s*#\s*include\s+"shardloader/([^"]+)"', re.M)


def room_of(path):
    """The room of a path relative to cpp/shardloader/."""
    if "/" not in path:
        if path in CORE:
            return "core"
        if path in OPTIONS:
            return "options"
        if path in FACADE:
            return "facade"
        return None
    parts = path.split("/")
    if parts[0] == "io" and len(parts) > 2:
        return "io/" + parts[1]
    return parts[0]


def public_headers(root):
    cmake = (root / "CMakeLists.txt").read_text()
    match = re.search(r"set\(SHARDLOADER_PUBLIC_HEADERS(.*?)\)", cmake, re.S)
    if not match:
        return None
    return set(match.group(1).split())


def find_cycles(graph):
    """Include cycles among files, each as a list of paths."""
    cycles, state, stack = [], {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == "open":
                cycles.append(stack[stack.index(target):] + [target])
            elif target not in state:
                visit(target)
        stack.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return cycles


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else
                        pathlib.Path(__file__).resolve().parent.parent)
    src = root / "cpp" / "shardloader"
    errors, graph = [], {}
    files = sorted(p for p in src.rglob("*") if p.suffix in (".h", ".cc"))
    for path in files:
        rel = path.relative_to(src).as_posix()
        room = room_of(rel)
        if room is None or room not in ALLOWED:
            errors.append(f"{rel}: in no room of the rule (add it to "
                          "scripts/check_includes.py and cpp/README.md)")
            continue
        graph[rel] = set()
        for included in INCLUDE.findall(path.read_text()):
            if not (src / included).exists():
                errors.append(f"{rel}: includes missing shardloader/{included}")
                continue
            graph[rel].add(included)
            target = room_of(included)
            if target == room:
                continue
            if target == "engine" and rel not in ENGINE_INCLUDERS:
                errors.append(f"{rel}: includes {included}; only loader.cc may "
                              "include engine/")
            elif target not in ALLOWED[room] and target != "engine":
                errors.append(f"{rel} ({room}) includes {included} ({target}): "
                              f"{room} may include {sorted(ALLOWED[room])}")
            if room == "facade" and target == "engine" and rel.endswith(".h"):
                errors.append(f"{rel}: a public header includes {included}")
    for cycle in find_cycles(graph):
        errors.append("include cycle: " + " -> ".join(cycle))

    public = public_headers(root)
    if public is None:
        errors.append("CMakeLists.txt: no SHARDLOADER_PUBLIC_HEADERS list")
    else:
        for header in sorted(public):
            if header not in graph:
                errors.append(f"public header {header} does not exist")
                continue
            for included in sorted(graph[header]):
                if included not in public:
                    errors.append(f"public header {header} includes {included}, "
                                  "which is not installed")

    for path in sorted((root / "bindings").glob("*")):
        if path.suffix not in (".h", ".cc"):
            continue
        for included in INCLUDE.findall(path.read_text()):
            if room_of(included) in BINDINGS_FORBIDDEN:
                errors.append(f"bindings/{path.name} includes {included}: "
                              "bindings use the public API and io/open/")

    for error in errors:
        print(error)
    print(f"check_includes: {len(files)} files, {len(errors)} violations")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
