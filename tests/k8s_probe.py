"""Run inside a pod by tests/test_target_k8s_real.py: reports what the container can see and do, as one JSON line.

No dollar sign anywhere in this file: the manifest doubles every dollar for the kubelet."""
import json
import os
import sys


def attempt(path):
    try:
        with open(path, "w") as handle:
            handle.write("x")
        return "ok"
    except OSError as exc:
        return os.strerror(exc.errno or 0)


status = {}
with open("/proc/self/status") as handle:
    for line in handle:
        key, _, value = line.partition(":")
        status[key] = value.strip()
mounts = []
with open("/proc/self/mountinfo") as handle:
    for line in handle:
        fields = line.split()
        dash = fields.index("-")
        mounts.append({"target": fields[4], "options": fields[5], "fstype": fields[dash + 1], "super": fields[dash + 3]})
report = {
    "uid": os.getuid(), "euid": os.geteuid(), "gid": os.getgid(), "groups": sorted(os.getgroups()),
    "cap": {k: status.get(k) for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")},
    "no_new_privs": status.get("NoNewPrivs"), "seccomp": status.get("Seccomp"),
    "writes": {p: attempt(p) for p in sys.argv[1:]},
    "exists": {p: os.path.exists(p) for p in ("/var/run/secrets/kubernetes.io/serviceaccount", os.environ.get("HOST_MARKER", "/nonexistent"))},
    "env": dict(os.environ),
    "mounts": mounts,
}
print("PROBE " + json.dumps(report), flush=True)
