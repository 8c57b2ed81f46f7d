"""Escaping proven by round trips through the real consumers.

Values drawn from the whole of Unicode (every category, control characters and NUL
included; surrogates only left out because UTF-8 cannot encode them) go through each
escaping function and come back identical through the program that reads the result:
``bash -c`` for shell words, systemd's own unit parser (``systemd --test`` dumps what it
loaded) for unit settings, ``python3 -IS`` for the bwrap launcher's CONFIG and for
comments, ``squid -k parse`` for squid.conf. A value an escaping cannot carry is refused
with ``Unrepresentable``, and through a build with a TG004 finding at the spec value.
Each test prints how many examples and values it ran.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import tempfile
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from conftest import require_tool
from mcpspec import api
from mcpspec.diagnostics import SpecError
from mcpspec.targets.build import build_plan
from mcpspec.targets.comments import comment_line, uncomment_text
from mcpspec.targets.egress import squid_word
from mcpspec.targets.escape import Unrepresentable, sh, sh_words, unit_arg, unit_env, unit_path, unit_text

# Every code point UTF-8 can encode, and the characters each language treats specially
# (drawn often: uniform code points would almost never hit them).
SPECIAL = [*"\x00\t\n\r\x0b\x0c\x1b\x7f %$\\\"'`{}[]()#;&|<>*?~!=:,@+/.-_", "\x85", "\xa0", "\u2028", "\u2029", "\ufeff", "\u202e", "$$", "%%", "${X}", "%i", "\\x41"]
PIECES = st.one_of(st.characters(exclude_categories=("Cs",)), st.sampled_from(SPECIAL))
VALUE = st.lists(PIECES, max_size=24).map("".join)
VALUES = st.lists(VALUE, min_size=1, max_size=40)
BATCH = st.lists(VALUE, min_size=8, max_size=40)  # many values per run of the consumer
PATH_PIECES = st.one_of(st.sampled_from(list("abcXYZ019_@+=,.-/")), PIECES)
PATH = st.lists(PATH_PIECES, max_size=20).map(lambda tail: "/" + "".join(tail))
# Random locally (each run explores new values); the same examples in CI (CI=true), so a CI
# failure is reproducible and never depends on the draw.
SETTINGS = settings(
    deadline=None, database=None, derandomize=os.environ.get("CI") == "true",
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _report(capsys: pytest.CaptureFixture[str], what: str, seen: Counter[str], least: int) -> None:
    with capsys.disabled():
        print(f"\n[round trip] {what}: {seen['examples']} examples, {seen['values']} values, {seen['refused']} refused")
    assert seen["values"] >= least, seen


def _refused(escape: Callable[[str], str], value: str) -> bool:
    try:
        escape(value)
    except Unrepresentable:
        return True
    return False


# --- POSIX shell, through bash ---


@pytest.mark.parametrize("locale", ["C.UTF-8", "C"])
def test_shell_words_come_back_identical_through_bash(locale: str, capsys: pytest.CaptureFixture[str]) -> None:
    bash = require_tool("bash")
    seen: Counter[str] = Counter()

    @SETTINGS
    @given(BATCH)
    @example(["", "a b", "'", "\\", "$HOME", "`id`", "!x", "\n", "~", "*", "é\x85\u2028"])
    @example(["a\n", "b"])  # was written bare: "$" matched before the final newline, which ended the command
    def check(values: list[str]) -> None:
        kept = []
        for value in values:
            if _refused(sh, value):
                assert "\x00" in value, repr(value)
                seen["refused"] += 1
            else:
                kept.append(value)
        script = "printf '%s\\0' " + sh_words(kept) if kept else ":"
        result = subprocess.run([bash, "--noprofile", "--norc", "-c", script], capture_output=True, timeout=30, check=False,
                                env={"LC_ALL": locale, "PATH": "/usr/bin:/bin"})
        assert result.returncode == 0, result.stderr
        assert result.stdout.split(b"\0")[:-1] == [value.encode() for value in kept]
        seen["examples"] += 1
        seen["values"] += len(values)

    check()
    _report(capsys, f"sh_words through bash -c ({locale})", seen, 300)


# --- systemd units, through systemd's own parser ---


@pytest.fixture(scope="module")
def unit_dir() -> Iterator[Path]:
    # World-readable: `systemd --test` refuses to run as root, so it reads the units as nobody.
    directory = Path(tempfile.mkdtemp(prefix="mcpspec-roundtrip-"))
    directory.chmod(0o755)
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def _systemd_dump(directory: Path, unit: str, text: str) -> tuple[bytes, bytes]:
    """(systemd's dump of ``unit`` after it parsed ``text``, what it said on stderr)."""
    systemd = next((c for c in ("/usr/lib/systemd/systemd", "/lib/systemd/systemd") if os.access(c, os.X_OK)), None)
    systemd = systemd or require_tool("/usr/lib/systemd/systemd")
    (directory / unit).write_bytes(text.encode())
    (directory / unit).chmod(0o644)
    command = [systemd, "--test", "--system", f"--unit={unit}", "--no-pager", "--log-target=console", "--log-level=warning"]
    if os.geteuid() == 0:  # systemd refuses test mode as root
        command = [require_tool("setpriv"), "--reuid=65534", "--regid=65534", "--clear-groups", *command]
    environment = {"PATH": "/usr/bin:/bin", "SYSTEMD_UNIT_PATH": f"{directory}:"}  # the trailing ':' keeps the default path
    result = subprocess.run(command, capture_output=True, timeout=60, env=environment, check=False)
    start = result.stdout.find(f"-> Unit {unit}:\n".encode())
    assert start >= 0, result.stderr[-2000:]
    end = result.stdout.find(b"\n\t-> Unit ", start)
    return result.stdout[start:end if end >= 0 else None], result.stderr


_C_ESCAPES = {ord(k): v for k, v in {"a": 7, "b": 8, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11}.items()}


def _dumped_words(line: bytes) -> list[str]:
    """The words of a dumped command line: systemd quotes a word holding a special character
    and writes C escapes (\\n, \\ooo octal, \\" \\\\ \\$) inside the quotes."""
    words: list[str] = []
    i = 0
    while i < len(line):
        if line[i] == 0x20:
            i += 1
            continue
        word = bytearray()
        if line[i] == 0x22:
            i += 1
            while line[i] != 0x22:
                if line[i] == 0x5C:
                    following = line[i + 1]
                    if following in _C_ESCAPES:
                        word.append(_C_ESCAPES[following])
                        i += 2
                    elif 0x30 <= following <= 0x37:
                        word.append(int(line[i + 1:i + 4], 8))
                        i += 4
                    elif following == ord("x"):
                        word.append(int(line[i + 2:i + 4], 16))
                        i += 4
                    else:
                        word.append(following)
                        i += 2
                else:
                    word.append(line[i])
                    i += 1
            i += 1
        else:
            while i < len(line) and line[i] != 0x20:
                assert line[i] not in b"\\\"'$", line
                word.append(line[i])
                i += 1
        words.append(word.decode())
    return words


def _at_run_time(word: str) -> str:
    """What exec sees: systemd turns '$$' into '$' (a lone '$' would start a variable)."""
    assert re.fullmatch(r"(?:[^$]|\$\$)*", word, re.S), f"unescaped $ in {word!r}"
    return word.replace("$$", "$")


def _setting(dump: bytes, key: str) -> list[bytes]:
    """Every value of one dumped setting (one line each)."""
    prefix = b"\t\t" + key.encode() + b": "
    return [line[len(prefix):] for line in dump.split(b"\n") if line.startswith(prefix)]


def _environment(dump: bytes, count: int) -> list[str]:
    """Values E0000.. in order: systemd prints them raw (a newline in a value continues on the next line)."""
    values = []
    for index in range(count):
        marker = f"\t\tEnvironment: E{index:04d}=".encode()
        following = f"\n\t\tEnvironment: E{index + 1:04d}=".encode() if index + 1 < count else b"\n\t\tEnvironment: ZZEND=end\n"
        start = dump.index(marker) + len(marker)
        values.append(dump[start:dump.index(following, start)].decode())
    return values


def test_unit_settings_come_back_identical_through_systemds_parser(unit_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    seen: Counter[str] = Counter()

    @settings(SETTINGS, max_examples=20)
    @given(args=BATCH, env=BATCH, description=VALUE, paths=st.lists(PATH, min_size=1, max_size=12))
    @example(args=["a\\", "", "%i", "$X", "${X}", "$$"], env=["a\nb", " lead", "trail ", "\\"], description="ends \\", paths=["/a/./b", "/a/b/", "/a/../b"])
    @example(args=["x"], env=["x"], description=" leading space", paths=["/"])
    @example(args=["x"], env=["x"], description="", paths=["/1\n", "/"])  # "/1\n" was written: "$" matched before the newline
    def check(args: list[str], env: list[str], description: str, paths: list[str]) -> None:
        kept_args = [a for a in args if not _refused(unit_arg, a)]
        kept_env = [v for v in env if not _refused(lambda v: unit_env("E", v), v)]
        assert all("\x00" in v for v in args if v not in kept_args) and all("\x00" in v for v in env if v not in kept_env)
        kept_paths = [p for p in paths if not _refused(unit_path, p)]
        lines = ["[Unit]"]
        text_kept = not _refused(unit_text, description)
        if text_kept:
            lines.append(f"Description={unit_text(description)}")
        lines += ["[Service]", "ExecStart=/bin/true " + " ".join(unit_arg(a) for a in kept_args)]
        lines += [f"Environment={unit_env(f'E{i:04d}', v)}" for i, v in enumerate(kept_env)] + ["Environment=ZZEND=end"]
        lines += [f"BindReadOnlyPaths={unit_path(p)}:/mnt/p{i}" for i, p in enumerate(kept_paths)]
        lines += [f"InaccessiblePaths=-{unit_path(p)}" for p in kept_paths]
        dump, stderr = _systemd_dump(unit_dir, "mcpspec-roundtrip.service", "\n".join(lines) + "\n")
        assert b"mcpspec-roundtrip.service:" not in stderr, stderr.decode(errors="replace")  # no setting was refused or ignored
        if text_kept:
            assert _setting(dump, "Description") == [description.encode()]
        (command,) = [line for line in dump.split(b"\n") if line.startswith(b"\t\t\tCommand Line: /bin/true")]
        assert [_at_run_time(w) for w in _dumped_words(command.removeprefix(b"\t\t\tCommand Line: "))] == ["/bin/true", *kept_args]
        assert _environment(dump, len(kept_env)) == kept_env
        assert _setting(dump, "BindReadOnlyPaths") == [f"{p}:/mnt/p{i}:rbind".encode() for i, p in enumerate(kept_paths)]
        assert b" ".join(_setting(dump, "InaccessiblePaths")).split() == [f"-{p}".encode() for p in kept_paths]
        seen["examples"] += 1
        seen["values"] += len(args) + len(env) + 1 + len(paths)
        seen["refused"] += len(args) - len(kept_args) + len(env) - len(kept_env) + len(paths) - len(kept_paths) + (not text_kept)

    check()
    _report(capsys, "unit_arg/unit_env/unit_text/unit_path through systemd --test", seen, 300)


# --- comments (unit, squid.conf, Python) and squid words ---

LEAKS = st.sampled_from(["\nEnvironment=LEAK=1", "\rExecStartPre=/bin/false", "\nhttp_access allow all", "\nprint('leak')", "\u2028x=1", "\x00", "\\"])
COMMENTED = st.lists(st.one_of(VALUE, st.tuples(VALUE, LEAKS, VALUE).map("".join)), min_size=1, max_size=12)


def _squid_processed(conf: str, directory: Path) -> list[str]:
    """The configuration lines squid read (``squid -k parse`` logs each one it processes)."""
    squid = require_tool("squid")
    path = directory / "roundtrip.squid.conf"
    path.write_bytes(conf.encode())
    result = subprocess.run([squid, "-k", "parse", "-f", str(path)], capture_output=True, timeout=60, check=False)
    log = result.stderr.decode()
    assert result.returncode == 0 and "ERROR" not in log and "WARNING" not in log, log[-2000:]
    return [line.split("| Processing: ", 1)[1] for line in log.splitlines() if "| Processing: " in line]


def test_comments_and_squid_words_never_leave_their_place(unit_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    python = require_tool("/usr/bin/python3")
    seen: Counter[str] = Counter()

    @settings(SETTINGS, max_examples=12)
    @given(texts=COMMENTED, words=BATCH)
    @example(texts=["a\nEnvironment=LEAK=1", "\\", "x\u2028print('leak')"], words=["a\n", "/var/log/x.log", "${HOME}", "a b", ""])
    def check(texts: list[str], words: list[str]) -> None:
        comments = [comment_line(text) for text in texts]
        assert [uncomment_text(c[2:]) if c != "#" else "" for c in comments] == texts
        # A unit: systemd reads only the settings, none of the comments.
        unit = "\n".join(["[Unit]", *comments, "Description=marker", "[Service]", *comments, "ExecStart=/bin/true", *comments]) + "\n"
        dump, stderr = _systemd_dump(unit_dir, "mcpspec-comments.service", unit)
        assert b"mcpspec-comments.service:" not in stderr, stderr.decode(errors="replace")
        assert _setting(dump, "Description") == [b"marker"] and not _setting(dump, "Environment")
        assert [line for line in dump.split(b"\n") if line.startswith(b"\t\t-> Exec")] == [b"\t\t-> ExecStart:"]
        # squid.conf: the comments and the squid words; squid processes exactly the lines written.
        kept = [word for word in words if not _refused(squid_word, word)]
        assert all(not re.fullmatch(r"[A-Za-z0-9_@+=:,./-]{1,4000}", w) for w in words if w not in kept)
        rules = [f"acl word_{i} note mcpspec {squid_word(word)}" for i, word in enumerate(kept)]
        rules += ["http_port 127.0.0.1:3999", "http_access deny all"]
        assert _squid_processed("\n".join([*comments, *rules, *comments]) + "\n", tmp_path) == rules
        # Python, as the bwrap launcher's header: the interpreter runs only the code.
        script = tmp_path / "launcher.py"
        script.write_bytes(("\n".join(["#!/usr/bin/python3 -IS", "# -*- coding: utf-8 -*-", *comments, "print('ok')", *comments]) + "\n").encode())
        result = subprocess.run([python, "-I", "-S", str(script)], capture_output=True, timeout=30, check=False)
        assert (result.returncode, result.stdout) == (0, b"ok\n"), result.stderr
        seen["examples"] += 1
        seen["values"] += len(texts) + len(words)
        seen["refused"] += len(words) - len(kept)

    check()
    _report(capsys, "comment_line through systemd, squid and python3; squid_word through squid -k parse", seen, 100)


# --- through a build: the bwrap launcher's CONFIG, and TG004 at the spec value ---


def _yaml(value: str) -> str:
    """A YAML double-quoted scalar of any text: everything but printable ASCII as an escape."""
    out = []
    for char in value:
        code = ord(char)
        if char in '"\\':
            out.append("\\" + char)
        elif 0x20 <= code < 0x7F:
            out.append(char)
        else:
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
    return '"' + "".join(out) + '"'


def _spec(env: list[str], targets: list[str], args: list[str], source: str = "/usr/share/doc") -> str:
    lines = ["version: 1", "project: roundtrip", "servers:", "  probe:", f"    command: [/usr/bin/python3, {', '.join(_yaml(a) for a in args)}]"]
    lines += ["    env:", "      set:", *(f"        E{i:04d}: {_yaml(value)}" for i, value in enumerate(env))]
    lines += ["    mounts:", *(f"      - {{from: {_yaml(source)}, to: {_yaml(target)}}}" for target in targets)]
    return "\n".join(lines) + "\n"


def _load(text: str) -> object:
    try:
        return api.load_text(text, "mcp-sandbox.yaml")
    except SpecError as exc:
        return exc


_READ_CONFIG = "import json, sys\nsys.stdout.write(json.dumps([CONFIG['setenv'], [m['target'] for m in CONFIG['mounts']], CONFIG['command']]))\n"


def test_bwrap_config_carries_any_value_to_the_launchers_interpreter(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    python = require_tool("/usr/bin/python3")
    seen: Counter[str] = Counter()

    # The schema refuses a NUL anywhere and a control character in a path (positioned errors):
    # left out here, or nearly every example would stop there.
    no_nul = VALUE.map(lambda v: v.replace("\x00", ""))
    no_control = VALUE.map(lambda v: "".join(c for c in v if unicodedata.category(c) != "Cc"))

    @settings(SETTINGS, max_examples=25)
    @given(env=st.lists(no_nul, min_size=1, max_size=30), tails=st.lists(no_control, min_size=1, max_size=8), args=st.lists(no_nul, min_size=1, max_size=30))
    @example(env=["\x85\u2028'\"\\", "}\n", "\x00"], tails=["a\nb", "'''", "\\N{x}"], args=["\x1b]0;x\x07"])
    def check(env: list[str], tails: list[str], args: list[str]) -> None:
        targets = [f"/m{i}/{tail}" for i, tail in enumerate(tails)]
        loaded = _load(_spec(env, targets, args))
        if isinstance(loaded, SpecError):  # the spec itself refuses (a NUL, a control character in a path), positioned at the value
            assert all(d.span.line > 0 and d.span.col > 0 for d in loaded.diagnostics), loaded
            seen["refused"] += 1
            return
        build = build_plan(loaded, "bwrap")  # type: ignore[arg-type]
        refused = [r for r in build.active if r.code == "TG004"]
        if refused:
            assert all(r.span.line > 0 and r.span.col > 0 for r in refused)
            seen["refused"] += 1
            return
        launcher = build.files["probe.py"]
        head = launcher[:launcher.index("# ---- mcpspec bwrap launcher runtime")]
        literal = head[head.index("CONFIG = ") + len("CONFIG = "):]
        config = ast.literal_eval(literal)
        script = tmp_path / "probe.py"
        script.write_bytes((head + _READ_CONFIG).encode())
        result = subprocess.run([python, "-I", "-S", str(script)], capture_output=True, timeout=30, check=False)
        assert result.returncode == 0, result.stderr
        setenv, mounted, command = json.loads(result.stdout)
        sandbox = loaded.servers["probe"]  # type: ignore[attr-defined]
        declared = {name: value for name, value in setenv if name.startswith("E")}
        assert declared == {f"E{i:04d}": value for i, value in enumerate(env)} == {n: v for n, v in config["setenv"] if n.startswith("E")}
        assert sorted(mounted) == sorted(m.target for m in sandbox.mounts)  # the resolver normalized them ("/a/" is "/a")
        assert command == ["/usr/bin/python3", *args] == list(sandbox.command)
        seen["examples"] += 1
        seen["values"] += len(env) + len(targets) + len(args)

    check()
    _report(capsys, "bwrap CONFIG through python3 -IS (env.set, mount targets, command)", seen, 200)


def test_a_path_systemd_cannot_carry_is_refused_at_the_spec_value(capsys: pytest.CaptureFixture[str]) -> None:
    seen: Counter[str] = Counter()

    @settings(SETTINGS, max_examples=30)
    @given(source=PATH)
    @example(source="/srv/a\n")
    @example(source="/srv/../etc")
    @example(source="/srv/data/")
    def check(source: str) -> None:
        text = _spec(["x"], ["/data"], ["-c", "pass"], source)
        seen["values"] += 1
        loaded = _load(text)
        if isinstance(loaded, SpecError):
            assert all(d.span.line > 0 for d in loaded.diagnostics)
            seen["refused"] += 1
            return
        build = build_plan(loaded, "systemd")  # type: ignore[arg-type]
        refused = [r for r in build.active if r.code == "TG004"]
        mount_line = next(i for i, line in enumerate(text.splitlines(), 1) if line.startswith("      - {from:"))
        source = loaded.servers["probe"].mounts[0].source  # type: ignore[attr-defined]  # as the resolver normalized it
        if _refused(unit_path, source):
            assert refused, build.files
            (finding,) = refused
            assert (finding.path, finding.span.line, finding.span.col) == (("servers", "probe", "mounts", 0, "from"), mount_line, 16), finding
            seen["refused"] += 1
        else:
            assert not refused
            assert f"BindReadOnlyPaths={source}:/data\n" in build.files["mcp-roundtrip_probe@.service"]
        seen["examples"] += 1

    check()
    _report(capsys, "mount sources through the systemd build (TG004 at file:line:col)", seen, 25)


def test_a_description_ending_in_a_backslash_still_builds() -> None:
    plan = api.load_text(_spec(["x"], ["/data"], ["-c", "pass"]).replace("  probe:\n", '  probe:\n    description: "ends \\\\"\n'), "mcp-sandbox.yaml")
    unit = build_plan(plan, "systemd").files["mcp-roundtrip_probe@.service"]
    assert "Description=MCP server probe: ends \\ (run %i)\n" in unit
