"""Benchmarks for `attend mcp` over real stdio. Run: .venv/bin/python bench/mcp_roundtrip.py [--baseline DIR]

Clients: raw JSON-RPC lines over the pipe (the reference), and the mcp SDK's stdio_client +
ClientSession. Figures:
- spawn to the first tools/list answer (goal <= 500 ms), against a bare interpreter start, and spawn to
  the first tools/call answer; with ``--baseline DIR`` (another checkout, e.g. the branch point from
  ``git archive``, put first on PYTHONPATH) the same for that tree, runs interleaved in one sitting;
- warm tools/call round trip (goal p50 <= 3 ms), against a ping round trip on the same server;
- the tools' size as the model receives them: {name (mcp__attend__ prefix), description, input
  schema} as compact JSON (goal < 6000 bytes; bench/e2e_tools_size.py measures the real client's request);
- `attend send --help` start time against a bare interpreter, and proof that the CLI never imports mcp.

The server runs outside any Claude session (a human caller), in a throwaway ATTEND_HOME.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

PY = sys.executable


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


class Raw:
    def __init__(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [PY, "-m", "attend", "mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            text=True,
            bufsize=1,
            cwd=env["HOME"],  # not this checkout: `-m` puts the working folder ahead of PYTHONPATH
        )
        self.n = 0

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.n += 1
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(
            json.dumps({"jsonrpc": "2.0", "id": self.n, "method": method, "params": params or {}}) + "\n"
        )
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())  # type: ignore[no-any-return]

    def initialize(self) -> None:
        self.request(
            "initialize",
            {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}},
        )
        assert self.proc.stdin
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
        self.proc.stdin.flush()

    def close(self) -> None:
        assert self.proc.stdin
        self.proc.stdin.close()
        self.proc.wait(timeout=10)


def bare_start(env: dict[str, str], runs: int = 7) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run([PY, "-c", "pass"], env=env, check=True)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def spawn_to_list(env: dict[str, str]) -> tuple[float, float, list[dict[str, Any]]]:
    """One spawn: seconds to the tools/list answer and to the first tools/call answer, and the tools."""
    t = time.perf_counter()
    raw = Raw(env)
    raw.initialize()
    tools = raw.request("tools/list")["result"]["tools"]
    listed = time.perf_counter() - t
    raw.request("tools/call", {"name": "status", "arguments": {}})
    called = time.perf_counter() - t
    raw.close()
    return listed, called, tools


def spawns(trees: dict[str, dict[str, str]], runs: int = 7) -> dict[str, tuple[float, float]]:
    """Median (list, call) seconds per tree, the trees' runs interleaved so load hits them alike."""
    got: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
    for _ in range(runs):
        for name, env in trees.items():
            listed, called, _ = spawn_to_list(env)
            got[name].append((listed, called))
    return {
        name: (statistics.median(t[0] for t in times), statistics.median(t[1] for t in times))
        for name, times in got.items()
    }


def warm_calls(env: dict[str, str], n: int = 400) -> tuple[list[float], list[float]]:
    raw = Raw(env)
    raw.initialize()
    for _ in range(30):
        raw.request("tools/call", {"name": "status", "arguments": {}})
    calls, pings = [], []
    for _ in range(n):
        t = time.perf_counter()
        answer = raw.request("tools/call", {"name": "status", "arguments": {}})
        calls.append(time.perf_counter() - t)
        assert not answer["result"].get("isError"), answer
        t = time.perf_counter()
        raw.request("ping")
        pings.append(time.perf_counter() - t)
    raw.close()
    return calls, pings


def sdk_calls(env: dict[str, str], n: int = 300) -> list[float]:
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    times: list[float] = []

    async def main() -> None:
        params = StdioServerParameters(command=PY, args=["-m", "attend", "mcp"], env=env)
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            for _ in range(30):
                await session.call_tool("status", {})
            for _ in range(n):
                t = time.perf_counter()
                await session.call_tool("status", {})
                times.append(time.perf_counter() - t)

    anyio.run(main)
    return times


def cli_start(env: dict[str, str], runs: int = 9) -> tuple[float, bool]:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run([PY, "-m", "attend", "send", "--help"], env=env, check=True, capture_output=True)
        times.append(time.perf_counter() - t)
    probe = (
        "import sys; from attend.cli.app import main\n"
        "try:\n    main(['send', '--help'])\nexcept SystemExit:\n    pass\n"
        "print('mcp' in sys.modules, file=sys.stderr)"
    )
    out = subprocess.run([PY, "-c", probe], env=env, capture_output=True, text=True)
    return statistics.median(times), out.stderr.strip().endswith("False")


def load() -> str:
    with open("/proc/loadavg") as f:
        return "load " + " ".join(f.read().split()[:3])


def main() -> None:
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline", type=str, default=None, help="another checkout to measure beside this one")
    args = ap.parse_args()
    home = tempfile.mkdtemp(prefix="attend-bench-")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "ATTEND"))}
    env.update(HOME=home, ATTEND_HOME=os.path.join(home, "spool"))
    trees = {"this tree": env}
    if args.baseline:
        trees[f"baseline {args.baseline}"] = {**env, "PYTHONPATH": os.path.abspath(args.baseline)}
    print(load())
    bare = bare_start(env)
    starts = spawns(trees)
    _, _, tools = spawn_to_list(env)
    size = sum(
        len(
            json.dumps(
                {
                    "name": "mcp__attend__" + t["name"],
                    "description": t.get("description"),
                    "input_schema": t["inputSchema"],
                },
                separators=(",", ":"),
                ensure_ascii=False,
            ).encode()
        )
        for t in tools
    )
    calls, pings = warm_calls(env)
    sdk = sdk_calls(env)
    cli, clean = cli_start(env)
    ms = 1000.0
    print("client: raw JSON-RPC lines over the pipe (reference); mcp SDK stdio_client + ClientSession")
    print(f"bare interpreter start           {bare * ms:7.1f} ms  (baseline)")
    for name, (listed, called) in starts.items():
        print(
            f"spawn -> first tools/list answer {listed * ms:7.1f} ms  ({listed / bare:.1f}x bare; goal <= 500 ms)"
            f"  -> first tools/call {called * ms:7.1f} ms   [{name}]"
        )
    print(
        f"warm tools/call status, raw      p50 {pct(calls, 0.5) * ms:6.2f} ms  p90 {pct(calls, 0.9) * ms:6.2f} ms"
        f"  ({pct(calls, 0.5) / pct(pings, 0.5):.1f}x ping; goal p50 <= 3 ms)"
    )
    print(f"warm ping, raw (baseline)        p50 {pct(pings, 0.5) * ms:6.2f} ms")
    print(f"warm tools/call status, SDK      p50 {pct(sdk, 0.5) * ms:6.2f} ms  p90 {pct(sdk, 0.9) * ms:6.2f} ms")
    print(f"tools as the model receives them {size} bytes for {len(tools)} tools (goal < 6000)")
    print(
        f"attend send --help start         {cli * ms:7.1f} ms  ({cli / bare:.1f}x bare); CLI imports mcp: {not clean}"
    )
    print(load())


if __name__ == "__main__":
    main()
