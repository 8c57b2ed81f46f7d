"""Measure mcpspec against its yardsticks, side by side in one run, and write docs/performance.md.

    python benchmarks/run.py            # or: make bench
    python benchmarks/run.py --quick    # fewer repetitions, no build times (a sanity check)

Every command runs as a fresh process with bytecode caching on (an installed tool has its
.pyc files; PYTHONDONTWRITEBYTECODE is removed from the children's environment and each
command runs once untimed first). Each figure is the median of several runs. Ratios are taken
on CPU time (user + system, from the operating system's accounting of each child), which a
loaded machine disturbs far less than wall time; wall times are shown beside them. The load
average before and after the run goes into the table: on a shared machine, read the CPU ratios.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from generate import generate
from report_sections import write_keeping_sections

from mcpspec.targets import TARGET_NAMES
from mcpspec.targets.examples import EXAMPLE_OPTIONS

ROOT = Path(__file__).resolve().parent.parent
GENERATED = ROOT / "benchmarks" / "generated"
SCHEMA = ROOT / "schemas" / "mcp-sandbox.schema.json"
SMALL = ROOT / "examples" / "coding-agent.yaml"
REPORT = ROOT / "docs" / "performance.md"
BIN = Path(sys.executable).parent
MIB = 1024 * 1024

# The yardstick of the big-file target: libyaml's C composer over the same text, timed inside
# its process (reading and importing excluded), in CPU and wall seconds.
COMPOSE = """
import gc, sys, time, yaml
text = open(sys.argv[1], encoding="utf-8").read()
gc.disable()
cpu, wall = time.process_time(), time.perf_counter()
yaml.compose(text, Loader=yaml.CSafeLoader)
print(time.process_time() - cpu, time.perf_counter() - wall)
"""


@dataclass(frozen=True)
class Sample:
    """One child process: wall seconds, CPU seconds (user + system), peak resident memory in MiB,
    and the system part of its CPU seconds."""

    wall: float
    cpu: float
    peak_mib: float
    system: float = 0.0


@dataclass(frozen=True)
class Figure:
    """The medians of several samples of one command."""

    wall: float
    cpu: float
    peak_mib: float
    system: float = 0.0

    @staticmethod
    def of(samples: Sequence[Sample]) -> Figure:
        return Figure(statistics.median(s.wall for s in samples), statistics.median(s.cpu for s in samples), max(s.peak_mib for s in samples),
                      statistics.median(s.system for s in samples))


def environment() -> dict[str, str]:
    """The children's environment: bytecode caching on, no colour, no CI-specific output."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "GITHUB_ACTIONS", "FORCE_COLOR")}
    env["NO_COLOR"] = "1"
    return env


ENV = environment()


def sample(command: Sequence[str], capture: bool = False) -> tuple[Sample, str]:
    """Run ``command`` once; its wall time, and its own CPU time and peak memory from wait4."""
    start = time.perf_counter()
    child = subprocess.Popen(list(command), cwd=ROOT, env=ENV, stdout=subprocess.PIPE if capture else subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    out = child.stdout.read().decode() if child.stdout is not None else ""
    _, _, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    child.returncode = 0  # reaped by wait4; stop Popen from waiting again
    if child.stdout is not None:
        child.stdout.close()
    return Sample(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, usage.ru_stime), out


def measure(command: Sequence[str], runs: int, warm_up: Sequence[str] | None = None) -> Figure:
    """The medians of ``runs`` timed runs, after one untimed run (of ``warm_up`` if given: the
    same command on a small file) that writes the bytecode caches."""
    sample(warm_up or command)
    return Figure.of([sample(command)[0] for _ in range(runs)])


def compose(path: Path, runs: int) -> Figure:
    samples = []
    for _ in range(runs):
        _, out = sample([sys.executable, "-c", COMPOSE, str(path)], capture=True)
        cpu, wall = (float(x) for x in out.split())
        samples.append(Sample(wall, cpu, 0.0))
    return Figure.of(samples)


# Where each target reads the generated servers' secrets from, by target: a system unit, a
# compose service and the bwrap launcher read a file on the host (systemd reads files only); a
# pod cannot read a file of the node, so k8s reads them from Kubernetes Secrets (NAME#KEY).
SECRET_PROVIDERS = {"k8s": ("k8s-secret", r"token-\1#api-token")}
FILE_SECRETS = ("file", r"/etc/mcp/token-\1")


def build_spec(path: Path, target: str) -> tuple[Path, Path]:
    """The generated spec with its secrets in a form ``target`` hands in (as files: systemd takes
    no other; from a provider the target reads), and a config that ignores the risk rules: the
    generated servers share workspaces and secrets on purpose, so the rules (which a build runs,
    as lint does) would refuse them; lint is timed apart. The build's own findings (TG) still stop it."""
    spec = GENERATED / f"build-{target}-{path.stem}.yaml"
    provider, ref = SECRET_PROVIDERS.get(target, FILE_SECRETS)
    text = path.read_text(encoding="utf-8").replace("as: {env: API_TOKEN}", "as: {file: /run/secrets/api-token}")
    spec.write_text(re.sub(r"provider: env\n    ref: TOKEN_(\d+)", f"provider: {provider}\n    ref: {ref}", text), encoding="utf-8")
    config = GENERATED / "build-config.yaml"
    config.write_text("ignore: [FS, GR, HR, LC, LG, NW, PL, SE, SP, SU, TE, TS]\n", encoding="utf-8")
    return spec, config


def build(mcpspec: str, path: Path, target: str, runs: int) -> Figure | None:
    """`mcpspec build` into a fresh, empty directory each time (so every file is written);
    None when the generated spec does not build for the target."""
    spec, config = build_spec(path, target)
    options = EXAMPLE_OPTIONS.get(target)
    flags = [f"--{name.replace('_', '-')}={value}" for name, value in (options.given() if options else {}).items()]
    out = GENERATED / f"build-{target}"
    command = [mcpspec, "build", str(spec), "--target", target, "--out", str(out), "--config", str(config), *flags]
    shutil.rmtree(out, ignore_errors=True)
    done = subprocess.run(command, cwd=ROOT, env=ENV, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        print(f"build --target {target}: the generated spec does not build:\n{done.stderr[-1000:]}", file=sys.stderr)
        return None
    samples = []
    for _ in range(runs):
        shutil.rmtree(out, ignore_errors=True)
        samples.append(sample(command)[0])
    shutil.rmtree(out, ignore_errors=True)
    return Figure.of(samples)


def machine() -> str:
    """One line about the machine: processor, cores, memory, Python."""
    model = "unknown processor"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        found = re.search(r"^model name\s*:\s*(.+)$", cpuinfo.read_text(encoding="utf-8", errors="replace"), re.M)
        model = found.group(1).strip() if found else model
    memory = ""
    meminfo = Path("/proc/meminfo")
    if meminfo.exists():
        found = re.search(r"^MemTotal:\s*(\d+) kB", meminfo.read_text(encoding="utf-8"), re.M)
        memory = f", {int(found.group(1)) / MIB:.0f} GiB" if found else ""
    return f"{model}, {os.cpu_count()} cores{memory}, {platform.system()} {platform.release()}, Python {platform.python_version()}"


def load_average() -> str:
    return " / ".join(f"{x:.1f}" for x in os.getloadavg())


def verdict(value: float, limit: float, below: bool = False) -> str:
    met = value < limit if below else value <= limit
    return "met" if met else "**not met**"


def only_builds(targets: Sequence[str]) -> None:
    """The build rows alone: CPU and wall seconds per target, nothing written to docs/."""
    GENERATED.mkdir(parents=True, exist_ok=True)
    thousand = GENERATED / "servers-1000.yaml"
    thousand.write_text(generate(1000), encoding="utf-8")
    for target in targets:
        figure = build(str(BIN / "mcpspec"), thousand, target, 3)
        shown = "did not build" if figure is None else f"{figure.cpu:.2f} s CPU (system {figure.system:.2f} s), {figure.wall:.2f} s wall, {figure.peak_mib:.0f} MiB"
        print(f"build --target {target} of 1,000 servers: {shown}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs and no build times")
    parser.add_argument("--no-write", action="store_true", help="print the table without writing docs/performance.md")
    parser.add_argument("--only-builds", nargs="*", metavar="TARGET", choices=TARGET_NAMES,
                        help="time only the builds of 1,000 servers (of these targets; all when none is named) and print them")
    args = parser.parse_args()
    if args.only_builds is not None:
        only_builds(args.only_builds or list(TARGET_NAMES))
        return
    runs_small, runs_big, runs_build = (3, 1, 0) if args.quick else (7, 3, 2)

    GENERATED.mkdir(parents=True, exist_ok=True)
    mcpspec = str(BIN / "mcpspec")
    checker = shutil.which("check-jsonschema", path=str(BIN)) or "check-jsonschema"
    load_before = load_average()
    started = time.perf_counter()

    big = GENERATED / "servers-10000.yaml"
    big.write_text(generate(10000), encoding="utf-8")
    thousand = GENERATED / "servers-1000.yaml"
    thousand.write_text(generate(1000), encoding="utf-8")
    # The generated spec must be a valid spec: its risk findings are part of the work measured.
    done = subprocess.run([mcpspec, "lint", str(thousand), "--fail-on", "never"], cwd=ROOT, env=ENV, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the generated spec is not a valid spec:\n{done.stdout[-2000:]}{done.stderr}")

    small_lint = measure([mcpspec, "lint", str(SMALL)], runs_small)
    small_check = measure([checker, "--schemafile", str(SCHEMA), str(SMALL)], runs_small)
    big_lint = measure([mcpspec, "lint", str(big)], runs_big, [mcpspec, "lint", str(thousand)])
    big_compose = compose(big, runs_big)
    # One run: its peak memory is the figure (and a run takes minutes on a loaded machine).
    graph_json = measure([mcpspec, "graph", str(big), "--format", "json"], 1, [mcpspec, "graph", str(thousand), "--format", "json"])
    builds = {target: build(mcpspec, thousand, target, runs_build) for target in TARGET_NAMES} if runs_build else {}
    load_after = load_average()
    minutes = (time.perf_counter() - started) / 60

    small_ratio = small_lint.cpu / small_check.cpu
    big_ratio = big_lint.cpu / big_compose.cpu
    rows = [
        ("lint of a small example / check-jsonschema of it with our schema", f"{small_ratio:.2f}x", "<= 0.6x", verdict(small_ratio, 0.6),
         f"{small_lint.cpu:.3f} s / {small_check.cpu:.3f} s", f"{small_lint.wall:.3f} s / {small_check.wall:.3f} s ({small_lint.wall / small_check.wall:.2f}x)"),
        ("lint of 10,000 servers / libyaml compose of the same file", f"{big_ratio:.2f}x", "<= 4x", verdict(big_ratio, 4),
         f"{big_lint.cpu:.2f} s / {big_compose.cpu:.2f} s", f"{big_lint.wall:.2f} s / {big_compose.wall:.2f} s ({big_lint.wall / big_compose.wall:.2f}x)"),
        ("`graph --format json` of 10,000 servers, peak resident memory", f"{graph_json.peak_mib:.0f} MiB", "< 512 MiB",
         verdict(graph_json.peak_mib, 512, below=True), f"{graph_json.cpu:.2f} s", f"{graph_json.wall:.2f} s"),
        ("lint of 10,000 servers, peak resident memory", f"{big_lint.peak_mib:.0f} MiB", "", "", "", ""),
    ]
    for target, figure in builds.items():
        shown = ("did not build", "", "") if figure is None else (f"{figure.wall:.2f} s wall", f"{figure.cpu:.2f} s", f"{figure.wall:.2f} s")
        rows.append((f"`build --target {target}` of 1,000 servers", shown[0], "", "", shown[1], shown[2]))

    lines = [
        "# Performance",
        "",
        "Written by `benchmarks/run.py` (`make bench`); do not edit by hand. Every figure is the median of",
        f"{runs_small} runs (small file), {runs_big} (lint of 10,000 servers; one `graph` run) or {runs_build} (builds of 1,000 servers) of a fresh process, with",
        "bytecode caching on as an installed tool has it. Ratios are of CPU time (user + system of each",
        "process), which a shared, loaded machine disturbs far less than wall time; wall times are beside them.",
        "The small example is `examples/coding-agent.yaml`; the big files come from `benchmarks/generate.py`.",
        "",
        "| Measure | Figure | Target | Verdict | CPU time | Wall time |",
        "|---|---|---|---|---|---|",
        *(f"| {' | '.join(row)} |" for row in rows),
        "",
        f"Machine: {machine()}. Run on {datetime.date.today().isoformat()}, {minutes:.0f} minutes; load average",
        f"(1 / 5 / 15 min) {load_before} before and {load_after} after, on a machine shared with other jobs.",
        "",
    ]
    table = "\n".join(lines)
    print(table)
    if not args.no_write and not args.quick:
        write_keeping_sections(REPORT, table)  # the relay's section (benchmarks/relay_overhead.py) stays
        print(f"wrote {REPORT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
