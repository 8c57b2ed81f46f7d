"""The compose target's file: valid by the compose-spec schema, hardened, and exact about hostile values.

The schema is check-jsonschema's vendored copy of compose-spec's (tests/data/compose-spec.json).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from hypothesis import HealthCheck, given, settings

from build_properties import build_all, dump, options, specs
from conftest import EXAMPLES, REPO
from mcpspec.api import SpecError, load, load_text
from mcpspec.targets.base import BuildOptions
from mcpspec.targets.build import build_plan
from mcpspec.targets.compose.reader import read_build
from mcpspec.targets.seccomp import oci_profile, syscall_policy
from mcpspec.targets.seccomp.policy import policy_for_families

SCHEMA = json.loads((REPO / "tests" / "data" / "compose-spec.json").read_text(encoding="utf-8"))
VALIDATOR = jsonschema.validators.validator_for(SCHEMA)(SCHEMA)
PROXY = BuildOptions(proxy_image="localhost/squid@sha256:" + "a" * 64)
IMAGE = "localhost/srv@sha256:" + "b" * 64


def _valid(text: str) -> dict[str, Any]:
    document = yaml.safe_load(text)
    errors = sorted(VALIDATOR.iter_errors(document), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:5])
    return dict(document)


def _build(text: str, options: BuildOptions | None = PROXY) -> Any:
    return build_plan(load_text(text, "mcp-sandbox.yaml"), "compose", options=options)


@pytest.mark.parametrize("options", [None, PROXY], ids=["no-proxy-image", "proxy-image"])
@pytest.mark.parametrize("spec", EXAMPLES, ids=lambda p: p.stem)
def test_every_example_validates(spec: Path, options: BuildOptions | None) -> None:
    files = build_plan(load(spec, str(spec)), "compose", options=options).files
    if "compose.yaml" in files:
        _valid(files["compose.yaml"])


@settings(max_examples=100, deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(specs())
def test_generated_specs_validate(spec: dict[str, object]) -> None:
    files = build_all(dump(spec))["compose"].files
    if "compose.yaml" in files:
        _valid(files["compose.yaml"])


HOSTILE_VALUES = ["${HOME}", "$(touch PWNED)", "a\nb: c", "'\"", "x: [y]", "%s %n", "\\x00", "$$", "${X:?boom}", "---\n- a", "yes", "0x10", "1e3", "\u2028"]


def test_hostile_values_come_back_exactly_and_never_interpolate() -> None:
    env = {f"V{i}": value for i, value in enumerate(HOSTILE_VALUES)}
    spec = {"version": 1, "project": "acme", "servers": {"alpha": {
        "image": IMAGE, "command": ["/srv", *HOSTILE_VALUES], "env": {"set": env}, "workdir": "/work"}}}
    build = _build(dump(spec))
    document = _valid(build.files["compose.yaml"])
    service = document["services"]["alpha"]
    assert service["entrypoint"] == ["/srv", *(v.replace("$", "$$") for v in HOSTILE_VALUES)]
    grants = read_build(build.files)["alpha"]
    assert dict(grants.env_set) == env
    assert "PWNED" not in "".join(line for line in build.files["compose.yaml"].splitlines() if not line.startswith("#")).replace("$$(touch PWNED)", "")


@pytest.mark.parametrize("path", ["/data,readonly=false", "/a:/b", "/a b", "/a\nb", "/a$b"])
def test_a_path_a_mount_option_could_split_is_refused(path: str) -> None:
    spec = {"version": 1, "project": "acme", "servers": {"alpha": {"image": IMAGE, "command": ["/srv"], "mounts": [{"from": "/srv/data", "to": path}]}}}
    try:
        build = _build(dump(spec))
    except SpecError:  # the spec's own validation refuses it first
        return
    assert "compose.yaml" not in build.files
    assert any(r.code in ("TG004",) for r in build.results) or any(r.severity == "error" for r in build.risks)


def test_service_hardening() -> None:
    spec = {"version": 1, "project": "acme",
            "workspace": {"root": "/srv/ws", "dirs": {"out": {"mode": "rw"}, "in": {"mode": "ro"}, "scratch": {"mode": "rw", "tmpfs": True, "size": "64Mi"}}},
            "secrets": {"tok": {"provider": "file", "ref": "/etc/mcp/tok"}, "gh": {"provider": "file", "ref": "~/gh"}},
            "servers": {
                "alpha": {"image": IMAGE, "command": ["/srv"], "runtime": {"user": 1000, "memory": "256Mi", "cpus": 0.5, "pids": 32},
                          "mounts": [{"from": "workspace.out", "to": "/out"}, {"from": "workspace.in", "to": "/in"}, {"from": "workspace.scratch", "to": "/scratch"},
                                     {"from": "/srv/data", "to": "/data"}],
                          "secrets": [{"use": "tok", "as": {"file": "/run/secrets/tok"}}, {"use": "gh", "as": {"env": "GH_TOKEN"}}]},
                "web": {"image": IMAGE, "command": ["/srv"], "transport": {"type": "http", "port": 8100}, "process": {"listeners": True}},
                "fetch": {"image": IMAGE, "command": ["/srv"], "egress": {"allow": ["pypi.mirror.acme.example:443"]}},
            }}
    build = _build(dump(spec))
    document = _valid(build.files["compose.yaml"])
    alpha = document["services"]["alpha"]
    assert alpha["user"] == "1000:1000" and alpha["read_only"] is True and alpha["cap_drop"] == ["ALL"]
    assert alpha["security_opt"] == ["no-new-privileges:true", "seccomp=./alpha.seccomp.json"] and alpha["network_mode"] == "none"
    profile = json.loads(build.files["alpha.seccomp.json"])
    assert (profile["defaultAction"], profile["defaultErrnoRet"]) == ("SCMP_ACT_ERRNO", 1)
    assert profile == oci_profile(syscall_policy(load_text(dump(spec), "mcp-sandbox.yaml").servers["alpha"]))  # the project's one policy
    socket_rules = [rule for rule in profile["syscalls"] if rule["names"] == ["socket"]]
    assert [rule["args"][0]["valueTwo"] for rule in socket_rules] == [1]  # AF_UNIX only: no egress, no HTTP
    assert (alpha["mem_limit"], alpha["cpus"], alpha["pids_limit"]) == (256 * 2**20, 0.5, 32)
    assert alpha["labels"] == {"mcpspec.project": "acme", "mcpspec.server": "alpha", "mcpspec.agents": ""}
    volumes = {v["target"]: v for v in alpha["volumes"]}
    assert volumes["/in"]["read_only"] is True and volumes["/out"]["read_only"] is False and volumes["/data"]["read_only"] is True
    assert volumes["/in"]["source"].startswith("${MCPSPEC_RUN_DIR:?") and volumes["/scratch"]["tmpfs"] == {"size": 64 * 2**20}
    assert volumes["/tmp"]["type"] == "tmpfs" and volumes["/tmp"]["tmpfs"]["size"] == 64 * 2**20
    assert alpha["secrets"] == [{"source": "tok", "target": "/run/secrets/tok"}, {"source": "gh", "target": "/run/secrets/mcpspec-env/GH_TOKEN"}]
    assert document["secrets"] == {"tok": {"file": "/etc/mcp/tok"}, "gh": {"file": "${HOME:?HOME must be set}/gh"}}
    assert alpha["entrypoint"][:5] == ["/bin/sh", "/mcpspec/entrypoint.sh", "GH_TOKEN=/run/secrets/mcpspec-env/GH_TOKEN", "--", "/srv"]
    assert "environment" not in alpha  # a secret is never an environment: value
    # No server joins a network: each lives in its link's namespace (loopback only), the helpers hold the sockets.
    web, web_link, web_port = (document["services"][name] for name in ("web", "web_link", "web_port"))
    assert web["network_mode"] == "service:web_link" and "networks" not in web and web["depends_on"] == ["web_link", "web_port"]
    assert web_link["network_mode"] == "none" and web_link["entrypoint"][-1] == "exec /usr/bin/socat UNIX-LISTEN:/mcpspec/link/http.sock,fork,unlink-early TCP4:127.0.0.1:8100"
    assert web_port["ports"] == ["127.0.0.1:8100:8000"] and web_port["networks"] == ["web_pub"] and document["networks"]["web_pub"] == {}
    assert web["healthcheck"]["test"][-1] == "http://127.0.0.1:8100/"
    fetch, proxy = document["services"]["fetch"], document["services"]["fetch_egress"]
    assert fetch["network_mode"] == "service:fetch_link" and fetch["depends_on"] == ["fetch_link", "fetch_egress"]
    assert "HTTPS_PROXY=http://127.0.0.1:3128" in fetch["environment"]
    assert proxy["image"] == PROXY.proxy_image and proxy["networks"] == ["fetch_out"]
    assert document["networks"]["fetch_out"] == {} and "fetch.squid.conf" in build.files
    for helper in ("web_link", "web_port", "fetch_link", "fetch_egress"):
        svc = document["services"][helper]
        assert (svc["user"], svc["read_only"], svc["cap_drop"]) == ("65532:65532", True, ["ALL"])
        assert svc["security_opt"] == ["no-new-privileges:true", "seccomp=./mcpspec-helpers.seccomp.json"]
    assert json.loads(build.files["mcpspec-helpers.seccomp.json"]) == oci_profile(policy_for_families(("AF_INET", "AF_INET6", "AF_UNIX")))
    assert document["services"]["fetch"]["security_opt"][1] == "seccomp=./fetch.seccomp.json" and "fetch.seccomp.json" in build.files
    assert all("mcpspec/link" not in str(v) for name in ("web", "fetch") for v in document["services"][name]["volumes"])
    assert document["volumes"]["fetch_sockets"]["driver_opts"]["type"] == "tmpfs"
    assert "acl listed_1 dstdomain -n pypi.mirror.acme.example" in build.files["fetch.squid.conf"]


def test_direct_egress_publishes_on_loopback_only_and_says_what_it_cannot_block() -> None:
    spec = {"version": 1, "project": "acme", "servers": {"web": {
        "image": IMAGE, "command": ["/srv"], "transport": {"type": "http", "port": 8100}, "process": {"listeners": True},
        "egress": {"default": "allow", "via": "direct"}}}}
    build = _build(dump(spec))
    web = _valid(build.files["compose.yaml"])["services"]["web"]
    assert web["ports"] == ["127.0.0.1:8100:8100"]
    assert any(r.code == "TG001" and "metadata" in r.message for r in build.results)


def test_without_a_proxy_image_an_allowlist_fails_closed() -> None:
    spec = {"version": 1, "project": "acme", "servers": {"fetch": {"image": IMAGE, "command": ["/srv"], "egress": {"allow": ["pypi.mirror.acme.example:443"]}}}}
    build = _build(dump(spec), options=None)
    assert build.blocked and any(r.code == "TG001" and "--proxy-image" in r.message for r in build.results)
    assert yaml.safe_load(build.files["compose.yaml"])["services"]["fetch"]["network_mode"] == "none"


def test_no_image_root_and_unreadable_secrets_are_findings() -> None:
    spec = {"version": 1, "project": "acme", "secrets": {"v": {"provider": "vault", "ref": "kv/a#b"}},
            "servers": {"noimage": {"command": ["/srv"]}, "root": {"image": IMAGE, "command": ["/srv"], "runtime": {"user": 0}},
                        "tagged": {"image": "ghcr.io/acme/srv:1.0", "command": ["/srv"], "secrets": [{"use": "v", "as": {"file": "/run/secrets/v"}}]}}}
    build = _build(dump(spec))
    codes = {(r.code, r.message.split(":")[1].strip()[:20]) for r in build.results}
    messages = " | ".join(f"{r.code} {r.message}" for r in build.results)
    assert "TG004" in messages and "names no image" in messages and "runtime.user 0" in messages
    assert "TG003" in messages and "not pinned by digest" in messages
    assert "TG001" in messages and "not from vault" in messages
    services = yaml.safe_load(build.files["compose.yaml"])["services"]
    assert set(services) == {"tagged"} and "secrets" not in services["tagged"], codes


def test_the_options_and_the_manifest() -> None:
    spec = {"version": 1, "project": "acme", "servers": {"alpha": {"image": IMAGE, "command": ["/srv"]}}}
    with pytest.raises(ValueError, match="takes no --proxy-image"):
        build_plan(load_text(dump(spec), "x.yaml"), "bwrap", options=PROXY)
    assert json.loads(_build(dump(spec)).files[".mcpspec-build.json"])["options"] == {"proxy_image": PROXY.proxy_image}
    compose_options = options("compose", "acme")
    assert compose_options is not None and compose_options.proxy_image


@pytest.mark.parametrize(("source", "mode", "secret", "refused"), [
    ("/srv/shared", "rw", "/srv/shared/token", True),
    ("/srv/shared/", "rw", "/srv/shared/deep/token", True),
    ("/srv/shared", "rw", "/srv/shared", True),
    ("/srv", "rw", "/srv/shared/token", True),
    ("/srv/shared", "rw", "/srv/shared2/token", False),
    ("/srv/shared", "rw", "/srv/share", False),
    ("/srv/shared", "ro", "/srv/shared/token", False),
])
def test_a_file_secret_another_server_can_write_is_refused(source: str, mode: str, secret: str, refused: bool) -> None:
    """The engine reads a file secret as root, following links: one inside any server's writable mount is not handed over."""
    spec = {"version": 1, "project": "acme", "secrets": {"t": {"provider": "file", "ref": secret}},
            "servers": {"writer": {"image": IMAGE, "command": ["/srv"], "mounts": [{"from": source, "to": "/data", "mode": mode}]},
                        "reader": {"image": IMAGE, "command": ["/srv"], "secrets": [{"use": "t", "as": {"file": "/run/secrets/t"}}]}}}
    found = [r for r in _build(dump(spec)).results if r.code == "TG001" and "a server of this spec can write" in r.message]
    assert bool(found) == refused, [r.message for r in found]


def test_the_reader_follows_a_server_into_its_links_namespace_and_out_only_through_its_proxy() -> None:
    spec = {"version": 1, "project": "acme", "servers": {
        "web": {"image": IMAGE, "command": ["/srv"], "transport": {"type": "http", "port": 8100}},
        "fetch": {"image": IMAGE, "command": ["/srv"], "egress": {"allow": ["pypi.mirror.acme.example:443"]}}}}
    build = _build(dump(spec))
    grants = read_build(build.files)
    assert sorted(grants) == ["fetch", "web"]  # helpers are read as their server's way out, not as servers
    assert grants["web"].egress.mode == "none" and grants["fetch"].egress.mode == "proxy"
    document = yaml.safe_load(build.files["compose.yaml"])
    # Anything else that can reach the sockets of the link's namespace is a way out to everything.
    labels = {"mcpspec.role": "intruder"}
    for intruder in ({"image": IMAGE, "labels": labels, "networks": ["fetch_out"], "volumes": [{"type": "volume", "source": "fetch_sockets", "target": "/s"}]},
                     {"image": IMAGE, "labels": labels, "network_mode": "service:web_link", "volumes": [{"type": "volume", "source": "other", "target": "/s"}]}):
        relay = {"image": IMAGE, "labels": labels, "networks": ["fetch_out"], "volumes": [{"type": "volume", "source": "other", "target": "/s"}]}
        tampered = dict(document, services={**document["services"], "intruder": intruder, "relay": relay})
        files = {**build.files, "compose.yaml": yaml.safe_dump(tampered)}
        read = read_build(files)
        assert "direct" in (read["fetch"].egress.mode, read["web"].egress.mode), intruder


def test_an_http_server_without_its_port_service_stays_off_every_network_and_says_so() -> None:
    spec = {"version": 1, "project": "acme", "servers": {"web": {"image": IMAGE, "command": ["/srv"], "transport": {"type": "http", "port": 8100}}}}
    build = _build(dump(spec), options=None)
    document = _valid(build.files["compose.yaml"])
    assert document["services"]["web"]["network_mode"] == "none" and "networks" not in document and sorted(document["services"]) == ["web"]
    assert any(r.code == "TG002" and "unreachable" in r.message for r in build.results), [r.message for r in build.results]
