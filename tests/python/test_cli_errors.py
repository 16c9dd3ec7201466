"""The CLI's error table: every expected mistake is one line on stderr that
names the input and the fix, exit code 2 for bad usage and 1 for a failure,
and no traceback (only with ``--debug``). Runs the installed ``shardloader``
command, as a user would."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

import shardloader as sl
from conftest import shardloader_command


@dataclass
class Case:
    name: str
    args: list[str]
    code: int
    words: list[str]  # each must appear (case-insensitive) in the one line


def _run(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([*shardloader_command(), *args], capture_output=True,
                          text=True, timeout=120)


def _setup(tmp: Path) -> dict[str, str]:
    src = tmp / "src"
    (src / "cat").mkdir(parents=True)
    for i in range(3):
        (src / "cat" / f"{i}.txt").write_text(f"sample {i}")
    (tmp / "empty").mkdir()
    (tmp / "afile").write_text("not a folder")
    shards = tmp / "shards"
    shards.mkdir()
    with sl.ShardWriter(str(shards / "t-%06d.tar"), max_count=2) as writer:
        for i in range(3):
            writer.write({"__key__": f"k{i}", "txt": f"s{i}"})
    corrupt = tmp / "corrupt-000000.tar"
    data = bytearray((shards / "t-000000.tar").read_bytes())
    data[1024:1536] = b"\xff" * 512  # the second member's header
    corrupt.write_bytes(bytes(data))
    return {"src": str(src), "empty": str(tmp / "empty"), "afile": str(tmp / "afile"),
            "shards": str(shards), "corrupt": str(corrupt), "tmp": str(tmp)}


def _cases(p: dict[str, str]) -> list[Case]:
    tmp = p["tmp"]
    return [
        # Bad usage: exit 2, the subcommand's own usage, one line.
        Case("no command", [], 2, ["usage: shardloader", "command"]),
        Case("misspelled pack option", ["pack", p["src"], f"{tmp}/o1/t-%06d.tar",
                                        "--max-sise", "1MB"],
             2, ["shardloader pack", "--max-sise", "--max-size"]),
        Case("misspelled inspect option", ["inspect", p["shards"], "--limt", "3"],
             2, ["shardloader inspect", "--limt", "--limit"]),
        Case("pack missing arguments", ["pack", p["src"]], 2,
             ["shardloader pack", "pattern"]),
        Case("pattern with two placeholders", ["pack", p["src"], f"{tmp}/o2/t-%d-%d.tar"],
             2, ["t-%d-%d.tar", "one", "%06d"]),
        Case("pattern without placeholder", ["pack", p["src"], f"{tmp}/o3/t.tar"],
             2, ["t.tar", "placeholder", "%06d"]),
        Case("bad size", ["pack", p["src"], f"{tmp}/o4/t-%06d.tar", "--max-size", "12XB"],
             2, ["12XB", "1GiB"]),
        # Failures: exit 1, the input named.
        Case("pack wrong source", ["pack", f"{tmp}/nope", f"{tmp}/o5/t-%06d.tar"],
             1, [f"{tmp}/nope", "not found"]),
        Case("pack source is a file", ["pack", p["afile"], f"{tmp}/o6/t-%06d.tar"],
             1, [p["afile"], "not a folder"]),
        Case("pack empty source", ["pack", p["empty"], f"{tmp}/o7/t-%06d.tar"],
             1, [p["empty"], "no files"]),
        Case("pack unwritable output", ["pack", p["src"], f"{p['afile']}/sub/t-%06d.tar"],
             1, [p["afile"], "cannot create"]),
        Case("pack over existing shards", ["pack", p["src"], f"{p['shards']}/t-%06d.tar"],
             1, [p["shards"], "2 shards", "--overwrite"]),
        Case("inspect wrong path", ["inspect", f"{tmp}/nope.tar"], 1, [f"{tmp}/nope.tar"]),
        Case("inspect empty folder", ["inspect", p["empty"]], 1, [p["empty"], "no shard"]),
        Case("inspect corrupt shard", ["inspect", p["corrupt"]], 1,
             [p["corrupt"], "offset"]),
        Case("index wrong path", ["index", f"{tmp}/nope.tar"], 1, [f"{tmp}/nope.tar"]),
        Case("index bad brace", ["index", f"{tmp}/t-{{0..1.tar"], 2, ["unbalanced"]),
    ]


def test_cli_error_table(tmp_path):
    paths = _setup(tmp_path)
    problems = []
    for case in _cases(paths):
        result = _run(case.args)
        lines = result.stderr.splitlines()
        line = lines[0] if lines else ""
        missing = [w for w in case.words if w.lower() not in line.lower()]
        if result.returncode != case.code or len(lines) != 1 or missing:
            problems.append(f"{case.name}: exit {result.returncode} (want {case.code}), "
                            f"{len(lines)} stderr lines, missing {missing}:\n"
                            f"{result.stderr[-1500:]}")
    # The failed packs left no output folders behind, the refused pack kept
    # the old shards.
    if (tmp_path / "o5").exists() or (tmp_path / "o7").exists():
        problems.append("a failed pack left its output folder behind")
    kept = sorted(p.name for p in Path(paths["shards"]).glob("*.tar"))
    if kept != ["t-000000.tar", "t-000001.tar"]:
        problems.append(f"the refused pack changed the shards there: {kept}")
    assert not problems, "\n\n".join(problems)


def test_debug_shows_the_traceback(tmp_path):
    result = _run(["--debug", "pack", str(tmp_path / "nope"), str(tmp_path / "t-%06d.tar")])
    assert result.returncode == 1
    assert "Traceback" in result.stderr


def test_version():
    result = _run(["--version"])
    assert result.returncode == 0
    assert result.stdout.strip() == f"shardloader {sl.__version__}"
