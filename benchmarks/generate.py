"""Generate large, valid specs for the benchmarks: N servers across N/10 agents."""

from __future__ import annotations

import sys

KINDS = ("code-exec", "filesystem", "browser", "data", "deploy", "package", "search")


def generate(servers: int) -> str:
    out = [
        "# yaml-language-server: $schema=../../schemas/mcp-sandbox.schema.json",
        "version: 1",
        f"project: bench-{servers}",
        "defaults:",
        "  runtime: {user: 65532, memory: 512Mi, cpus: 1.0, pids: 128}",
        "  egress: {default: deny}",
        "  lifecycle: {mode: per-task, idle_timeout: 15m, max_lifetime: 4h}",
        "  logging: {audit: true, redact: true, sink: /var/log/mcp/audit.jsonl}",
        "workspace:",
        "  root: /srv/mcp/workspaces",
        "  dirs:",
        "    input: {mode: ro}",
        "    output: {mode: rw}",
        "    tmp: {mode: rw, tmpfs: true, size: 256Mi}",
        "secrets:",
    ]
    for index in range(0, servers, 10):
        out += [f"  token-{index}:", "    provider: env", f"    ref: TOKEN_{index}", "    scopes: [read]", "    ttl: 1h"]
    out.append("agents:")
    for index in range(0, servers, 10):
        members = ", ".join(f"s{n}" for n in range(index, min(index + 10, servers)))
        out += [f"  agent-{index}:", f"    servers: [{members}]"]
    out.append("servers:")
    for index in range(servers):
        kind = KINDS[index % len(KINDS)]
        out += [
            f"  s{index}:",
            f"    description: Server number {index}, a {kind} server.",
            f"    kind: {kind}",
            "    placement: dedicated",
            "    transport: {type: stdio}",
            f"    image: ghcr.io/acme/mcp-{kind}@sha256:{index:064x}",
            f"    command: [python, -m, mcp_{kind.replace('-', '_')}, --id, '{index}']",
            "    mounts:",
            "      - {from: workspace.input, to: /workspace/input}",
            "      - {from: workspace.output, to: /workspace/output}",
            "      - {from: workspace.tmp, to: /workspace/tmp}",
            "    secrets:",
            f"      - {{use: token-{index - index % 10}, as: {{env: API_TOKEN}}}}",
            "    egress:",
            "      allow:",
            f"        - api{index}.example.com:443",
            f"        - '*.docs{index}.example.org:443'",
            "        - 10.20.0.0/16:5432",
            "    process:",
            "      allow: [git, python]",
            "      deny: [curl, wget]",
            "      max_runtime: 10m",
            "    tools:",
            f"      read_{index}: {{effects: [reads_private]}}",
            f"      fetch_{index}: {{effects: [reads_untrusted, external_send], approval: always}}",
        ]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.stdout.write(generate(int(sys.argv[1])))
