"""`vmafcompare monitor --config` on good and bad configs (README "Monitoring", "The config"):
a bad config is one stderr line per problem naming the entry and the key, and status 2, with
--check and without; a good one is `config OK: ...` with --check; a busy --listen is status 1."""

from __future__ import annotations

import re
import socket
import subprocess
from pathlib import Path

import pytest

import harness as h

GOOD = """\
[server]
stop-timeout = 2.0

[defaults]
backend = "cpu"
alert-threshold = 70.0

[[channel]]
name = "news"
reference = "udp://127.0.0.1:{p0}"
  [[channel.rendition]]
  label = "720p"
  uri = "udp://127.0.0.1:{p1}"
  [[channel.rendition]]
  label = "540p"
  uri = "udp://127.0.0.1:{p2}"
  distorted-delay = 0.2

[[channel]]
name = "sport"
reference = "srt://127.0.0.1:{p3}"
  [[channel.rendition]]
  label = "720p"
  uri = "srt://127.0.0.1:{p4}"
"""

# Each bad config is GOOD with one mistake: (what is replaced, by what, words its line must hold).
BAD = {
    "unknown-key": ('  label = "540p"\n', '  label = "540p"\n  urii = "udp://127.0.0.1:1"\n', ["news", "540p", "urii"]),
    "missing-uri": ('  label = "540p"\n  uri = "udp://127.0.0.1:{p2}"\n', '  label = "540p"\n', ["news", "540p", "uri"]),
    "duplicate-channel": ('name = "sport"', 'name = "news"', ["news", "name"]),
    "bad-threshold": ('name = "sport"\n', 'name = "sport"\nalert-threshold = 140\n', ["sport", "alert-threshold"]),
}


def config(tmp_path: Path, text: str, name: str = "monitor.toml") -> Path:
    ports = {f"p{i}": h.free_port() for i in range(5)}
    path = tmp_path / name
    path.write_text(text.format(**ports))
    return path


def run(command: str, *args, timeout: float = 30) -> subprocess.CompletedProcess:
    try:
        return subprocess.run([command, "monitor", *map(str, args)], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"`monitor {' '.join(map(str, args))}` still running after {timeout} s: {e.stderr!r}")


def test_good_config_checks(command, tmp_path):
    cfg = config(tmp_path, GOOD)
    r = run(command, "--config", cfg, "--check")
    assert r.returncode == 0, r.stderr
    assert "config OK: 2 channels, 3 renditions" in r.stdout, (r.stdout, r.stderr)


@pytest.mark.parametrize("check", [True, False], ids=["check", "run"])
@pytest.mark.parametrize("case", BAD)
def test_bad_config(command, tmp_path, case, check):
    old, new, words = BAD[case]
    assert old in GOOD
    cfg = config(tmp_path, GOOD.replace(old, new), f"{case}.toml")
    r = run(command, "--config", cfg, *(["--check"] if check else []), "--listen", f"127.0.0.1:{h.free_port()}", timeout=20)
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert r.returncode == 2, f"status {r.returncode}, stderr:\n{r.stderr}"
    assert len(lines) == 1, f"{case}: expected one line, got:\n{r.stderr}"
    assert cfg.name in lines[0], lines[0]
    assert re.search(r"\(entry \d+\)", lines[0]), f"{case}: no entry named in {lines[0]!r}"
    channel, *rest = words
    assert f'channel "{channel}"' in lines[0], f"{case}: channel {channel!r} not named in {lines[0]!r}"
    for w in rest:  # a label or key: quoted, or a word of the sentence ("duplicate channel name")
        assert f'"{w}"' in lines[0] or re.search(rf"(?<![\w-]){re.escape(w)}(?![\w-])", lines[0]), \
            f"{case}: {w!r} not named in {lines[0]!r}"
    assert "config OK" not in r.stdout


def test_bad_options(command, tmp_path):
    r = run(command)
    assert r.returncode == 2 and "--config" in r.stderr, r.stderr
    r = run(command, "--config", tmp_path / "absent.toml", "--check")
    assert r.returncode == 2 and "absent.toml" in r.stderr, r.stderr


def test_busy_listen_address(command, tmp_path):
    cfg = config(tmp_path, GOOD)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((h.HOST, 0))
        s.listen()
        addr = f"{h.HOST}:{s.getsockname()[1]}"
        r = run(command, "--config", cfg, "--listen", addr, timeout=20)
    assert r.returncode == 1, f"status {r.returncode}, stderr:\n{r.stderr}"
    assert addr in r.stderr, r.stderr
