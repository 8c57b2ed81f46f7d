"""Benchmark mcpspec against the yardsticks of the roadmap's performance targets.

Run with `make bench`. Each figure is the median of several fresh processes on
this machine, measured side by side with the yardstick, so ratios hold across
machines better than seconds do.
"""

from __future__ import annotations

import json
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from generate import generate

from mcpspec.targets import TARGET_NAMES
from mcpspec.targets.examples import EXAMPLE_OPTIONS

ROOT = Path(__file__).resolve().parent.parent
GENERATED = ROOT / "benchmarks" / "generated"
SCHEMA = ROOT / "schemas" / "mcp-sandbox.schema.json"
SMALL = ROOT / "examples" / "coding-agent.yaml"
BIN = Path(sys.executable).parent

COMPOSE = """
import gc, sys, time, yaml
text = open(sys.argv[1], encoding="utf-8").read()
gc.disable()
start = time.perf_counter()
yaml.compose(text, Loader=yaml.CSafeLoader)
print(time.perf_counter() - start)
"""


def wall(command: list[str], runs: int) -> float:
    """Median wall time of ``runs`` fresh processes (their exit status is not judged)."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def build_seconds(mcpspec: str, path: Path, target: str, runs: int) -> float | None:
    """Median wall time of `mcpspec build` into a fresh, empty directory (so every file is written);
    None when the generated spec does not build for the target (the container targets need images)."""
    # systemd hands secrets in as files only: the same servers, with file-form secrets.
    spec = GENERATED / f"build-{path.stem}.yaml"
    text = path.read_text(encoding="utf-8").replace("as: {env: API_TOKEN}", "as: {file: /run/secrets/api-token}")
    spec.write_text(re.sub(r"provider: env\n    ref: TOKEN_(\d+)", r"provider: file\n    ref: /etc/mcp/token-\1", text), encoding="utf-8")
    # The generated servers share workspaces and secrets on purpose, so the risk rules (which the
    # build runs, as lint does) refuse them; the figure is the target's own work, lint is timed apart.
    config = GENERATED / "build-config.yaml"
    config.write_text("ignore: [FS, GR, HR, LC, LG, NW, PL, SE, SP, SU, TE, TS]\n", encoding="utf-8")
    times = []
    for run in range(runs):
        out = GENERATED / f"build-{target}-{run}"
        shutil.rmtree(out, ignore_errors=True)
        start = time.perf_counter()
        options = EXAMPLE_OPTIONS.get(target)
        flags = [f"--{name.replace('_', '-')}={value}" for name, value in (options.given() if options else {}).items()]
        done = subprocess.run([mcpspec, "build", str(spec), "--target", target, "--out", str(out), "--config", str(config), *flags],
                              cwd=ROOT, capture_output=True, text=True, check=False)
        times.append(time.perf_counter() - start)
        if done.returncode == 1 and "nothing built" in done.stderr:
            print(f"build --target {target}: the generated spec does not build ({done.stderr.strip().splitlines()[-2][:160]})")
            return None
        if done.returncode != 0:
            raise SystemExit(f"build of the generated spec for {target} failed:\n{done.stderr[-2000:]}")
        shutil.rmtree(out, ignore_errors=True)
    return statistics.median(times)


def peak_rss_mib(command: list[str]) -> float:
    """Peak resident memory of one run of ``command``, in MiB."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    subprocess.run(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(before, after) / 1024


def compose_seconds(path: Path, runs: int) -> float:
    return statistics.median(
        float(subprocess.run([sys.executable, "-c", COMPOSE, str(path)], capture_output=True, text=True, check=True).stdout) for _ in range(runs)
    )


GRAPH_BUILD = """
import gc, sys, time
from mcpspec.analysis.graph import build
from mcpspec.api import load
from mcpspec.rules.engine import run_rules
from mcpspec.rules.registry import all_rules
plan = load(sys.argv[1])
gc.disable()
start = time.perf_counter()
build(plan)
built = time.perf_counter()
run_rules(plan, [rule for rule in all_rules() if rule.category == "graph"])  # builds its own graph
print(built - start, time.perf_counter() - built)
"""


def graph_seconds(path: Path, runs: int) -> tuple[float, float]:
    """Median times to build the trust graph of a resolved plan, and to build it and run every
    graph rule, each in a fresh process."""
    samples = [
        tuple(float(x) for x in subprocess.run([sys.executable, "-c", GRAPH_BUILD, str(path)], capture_output=True, text=True, check=True).stdout.split())
        for _ in range(runs)
    ]
    return statistics.median(s[0] for s in samples), statistics.median(s[1] for s in samples)


def main() -> None:
    GENERATED.mkdir(parents=True, exist_ok=True)
    mcpspec = str(BIN / "mcpspec")
    checker = shutil.which("check-jsonschema", path=str(BIN)) or "check-jsonschema"
    results: dict[str, float] = {}

    results["version_s"] = wall([mcpspec, "--version"], 15)
    results["check_jsonschema_version_s"] = wall([checker, "--version"], 15)
    results["lint_small_s"] = wall([mcpspec, "lint", str(SMALL)], 9)
    results["check_jsonschema_small_s"] = wall([checker, "--schemafile", str(SCHEMA), str(SMALL)], 9)

    for servers, runs in ((1000, 5), (10000, 3)):
        path = GENERATED / f"servers-{servers}.yaml"
        path.write_text(generate(servers), encoding="utf-8")
        # The generated spec must be valid; its risk findings are part of the work measured.
        ok = subprocess.run([mcpspec, "lint", str(path), "--fail-on", "never"], capture_output=True, text=True, check=False)
        if ok.returncode != 0:
            raise SystemExit(f"generated spec is not a valid spec:\n{ok.stdout[-2000:]}{ok.stderr}")
        results[f"lint_{servers}_s"] = wall([mcpspec, "lint", str(path)], runs)
        results[f"check_jsonschema_{servers}_s"] = wall([checker, "--schemafile", str(SCHEMA), str(path)], runs)
        results[f"libyaml_compose_{servers}_s"] = compose_seconds(path, runs)
        results[f"lint_{servers}_peak_mib"] = peak_rss_mib([mcpspec, "lint", str(path)])
        results[f"graph_build_{servers}_s"], results[f"graph_rules_{servers}_s"] = graph_seconds(path, runs)
        results[f"graph_json_{servers}_s"] = wall([mcpspec, "graph", str(path), "--format", "json"], runs)
        results[f"graph_json_{servers}_peak_mib"] = peak_rss_mib([mcpspec, "graph", str(path), "--format", "json"])
        if servers == 1000:
            for target in TARGET_NAMES:
                seconds = build_seconds(mcpspec, path, target, runs)
                if seconds is not None:
                    results[f"build_{target}_{servers}_s"] = seconds

    ratios = {
        "version / check-jsonschema --version (target <= 0.7)": results["version_s"] / results["check_jsonschema_version_s"],
        "lint small / check-jsonschema small (target <= 1.0)": results["lint_small_s"] / results["check_jsonschema_small_s"],
        "lint 1k / check-jsonschema 1k (target <= 0.5)": results["lint_1000_s"] / results["check_jsonschema_1000_s"],
        "lint 10k / check-jsonschema 10k (target <= 0.5)": results["lint_10000_s"] / results["check_jsonschema_10000_s"],
        "lint 1k / libyaml compose 1k (target <= 5)": results["lint_1000_s"] / results["libyaml_compose_1000_s"],
        "lint 10k / libyaml compose 10k (target <= 5)": results["lint_10000_s"] / results["libyaml_compose_10000_s"],
        "lint 10k / lint 1k (target <= 11)": results["lint_10000_s"] / results["lint_1000_s"],
        "graph build 10k / graph build 1k (target <= 11)": results["graph_build_10000_s"] / results["graph_build_1000_s"],
        "graph build + graph rules 10k / 1k (target <= 11)": results["graph_rules_10000_s"] / results["graph_rules_1000_s"],
        "graph --format json 10k / 1k (target <= 11)": results["graph_json_10000_s"] / results["graph_json_1000_s"],
    }
    for target in TARGET_NAMES:
        seconds = results.get(f"build_{target}_1000_s")
        shown = "not built" if seconds is None else f"{seconds:6.2f}"
        print(f"{'build --target ' + target + ' of 1k servers, s (target <= 3)':55} {shown}")
    for name, value in results.items():
        print(f"{name:32} {value:9.3f}")
    print()
    for name, value in ratios.items():
        print(f"{name:55} {value:6.2f}")
    print(f"{'peak memory at 10k, MiB (target <= 1024)':55} {results['lint_10000_peak_mib']:6.0f}")
    print(f"{'graph --format json peak memory at 10k, MiB':55} {results['graph_json_10000_peak_mib']:6.0f}")
    (GENERATED / "results.json").write_text(json.dumps({"seconds": results, "ratios": ratios}, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
