"""A stdio MCP server run inside a pod by tests/test_target_k8s_real.py, behind the mcp-proxy bridge.

It uses the image's own mcp SDK (the one mcp-proxy brought). No dollar sign anywhere in this
file: the manifest doubles every dollar for the kubelet."""
import json
import os

from mcp.server.fastmcp import FastMCP

app = FastMCP("bridged")


def cmdline(pid):
    with open("/proc/" + str(pid) + "/cmdline", "rb") as handle:
        return [part.decode() for part in handle.read().split(b"\0") if part]


@app.tool()
def inspect_pod() -> str:
    """What the server sees: who it runs as, who started it, what pid 1 is."""
    status = {}
    with open("/proc/self/status") as handle:
        for line in handle:
            key, _, value = line.partition(":")
            status[key] = value.strip()
    try:
        with open("/bridge-root", "w") as handle:
            handle.write("x")
        root = "ok"
    except OSError as exc:
        root = os.strerror(exc.errno or 0)
    return json.dumps({
        "uid": os.getuid(), "gid": os.getgid(), "cap_eff": status.get("CapEff"), "no_new_privs": status.get("NoNewPrivs"),
        "root_write": root, "parent": cmdline(os.getppid()), "pid1": cmdline(1), "greeting": os.environ.get("GREETING"),
    })


@app.tool()
def echo(text: str) -> str:
    return text


app.run()
