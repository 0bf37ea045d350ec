"""The CLI reports an operator's mistake or a failing server as one line on stderr, with the
exit code its ``--help`` documents, never a traceback."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from streamsaver import StreamSaver
from streamsaver.cli.main import build_parser, main
from streamsaver.demo import run_demo
from streamsaver.errors import MissingModuleError
from streamsaver.server.embedded import EmbeddedRedis, free_port


@pytest.fixture(scope="module")
def deployment(redis_url: str) -> str:
    return run_demo(redis_url, out=io.StringIO()).prefix


def test_help_documents_the_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    shown = capsys.readouterr().out
    assert "Exit codes" in shown and "1 an error" in shown and "2 a usage error" in shown
    assert "Exit codes" in build_parser().format_help()


@pytest.mark.parametrize(
    "args",
    [
        ["verify", "--url", "bogus://host"],  # a URL the client refuses (ValueError)
        ["export", "{dir}/missing/dir/out.jsonl"],  # a directory that does not exist (OSError)
        ["import", "{dir}/nothing.jsonl", "--into-prefix", "fresh"],
        ["restore", "t", "--at", "not-a-time", "--into", "new"],
        ["inspect", "no-such-thread"],
    ],
    ids=["bad-url", "export-into-missing-dir", "import-missing-file", "bad-time", "unknown-thread"],
)
def test_an_error_is_one_line_on_stderr_with_exit_code_1(
    redis_url: str, deployment: str, tmp_path: object, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    argv = [a.format(dir=tmp_path) for a in args]
    if "--url" not in argv:
        argv += ["--url", redis_url]

    code = main([*argv, "--prefix", deployment])

    err = capsys.readouterr().err
    assert code == 1
    assert err.startswith("streamsaver: error: ") and err.count("\n") == 1 and "Traceback" not in err


def test_a_bad_option_value_is_a_usage_error(
    redis_url: str, deployment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["tail", "--count", "-1", "--url", redis_url, "--prefix", deployment]) == 2
    assert "Traceback" not in capsys.readouterr().err



# Issue 22, item 3: the errors say what is wrong with the server, the URL or the command line.


@pytest.fixture(scope="module")
def bare_server() -> Iterator[EmbeddedRedis]:
    """A Redis without the search and JSON modules."""
    with EmbeddedRedis(modules=False) as server:
        yield server


@pytest.fixture(scope="module")
def locked_server() -> Iterator[EmbeddedRedis]:
    """A Redis (with the modules) that wants the password ``s3cret``."""
    with EmbeddedRedis(extra_args=["--requirepass", "s3cret"]) as server:
        yield server


@pytest.mark.parametrize(
    "command",
    [["stats"], ["verify"], ["replay"], ["project", "--view", "shallow", "--burst"], ["inspect", "t"],
     ["tail", "--count", "1"]],
    ids=lambda c: c[0],
)
def test_a_server_without_the_modules_is_named_as_such(
    bare_server: EmbeddedRedis, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    assert main([*command, "--url", bare_server.url]) == 1
    err = capsys.readouterr().err
    assert "has no RediSearch (search) module" in err and err.count("\n") == 1
    assert "no streamsaver deployment" not in err and "FT._LIST'," not in err


def test_a_password_needed_or_refused_is_said_so(
    locked_server: EmbeddedRedis, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["stats", "--url", locked_server.url]) == 1
    assert "the server needs a password: give it in the URL" in capsys.readouterr().err
    wrong = locked_server.url.replace("redis://", "redis://:wrong@")
    assert main(["stats", "--url", wrong]) == 1
    assert "refused the user name or password" in capsys.readouterr().err
    right = locked_server.url.replace("redis://", "redis://:s3cret@")
    main(["stats", "--url", right])
    assert "password" not in capsys.readouterr().err


def test_a_server_that_does_not_answer_gets_a_hint(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["stats", "--url", f"redis://127.0.0.1:{free_port()}/0"]) == 1
    err = capsys.readouterr().err
    assert "Connection refused" in err and "'streamsaver server' starts a local one" in err


def test_url_and_prefix_before_the_command(redis_url: str, deployment: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["stats", "--json", "--url", redis_url, "--prefix", deployment]) == 0
    after = capsys.readouterr().out
    assert main(["--url", redis_url, "--prefix", deployment, "stats", "--json"]) == 0
    assert capsys.readouterr().out == after and json.loads(after)["threads"] > 0
    assert main(["--url", "redis://nowhere.invalid:1", "--prefix", "other", "stats", "--json",
                 "--url", redis_url, "--prefix", deployment]) == 0  # after the command wins
    assert capsys.readouterr().out == after


def test_a_mistyped_command_gets_a_suggestion(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["stast"]) == 2
    assert "unknown command 'stast': did you mean stats?" in capsys.readouterr().err


def test_no_server_given_is_a_usage_error(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("REDIS_URL", raising=False)
    assert main(["stats"]) == 2
    assert "no server given: pass --url URL or set REDIS_URL" in capsys.readouterr().err


def _cli(*args: str, **streams: Any) -> subprocess.CompletedProcess[bytes]:
    """``python -m streamsaver ARGS`` with the standard streams given."""
    return subprocess.run([sys.executable, "-m", "streamsaver", *args], check=False, timeout=120, **streams)


def test_export_to_standard_output_and_import_from_standard_input(
    redis_url: str, deployment: str, prefix: str, tmp_path: Path
) -> None:
    exported = tmp_path / "export.jsonl.gz"
    with exported.open("wb") as out:
        done = _cli("export", "-", "--url", redis_url, "--prefix", deployment, stdout=out, stderr=subprocess.PIPE)
    assert done.returncode == 0 and b"to standard output" in done.stderr
    assert exported.read_bytes()[:2] == b"\x1f\x8b" and not (tmp_path / "-").exists()
    with exported.open("rb") as source:
        done = _cli("import", "-", "--url", redis_url, "--into-prefix", prefix, "--json", stdin=source,
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["threads"] > 0


def test_a_refused_setup_or_import_writes_nothing(bare_server: EmbeddedRedis, redis_url: str, deployment: str,
                                                  prefix: str, tmp_path: Path) -> None:
    bare = redis.Redis.from_url(bare_server.url)
    with pytest.raises(MissingModuleError):
        StreamSaver(bare, prefix=prefix).setup()
    assert bare.keys("*") == []
    export = str(tmp_path / "e.jsonl.gz")
    assert main(["export", export, "--url", redis_url, "--prefix", deployment]) == 0
    assert main(["import", export, "--url", bare_server.url, "--into-prefix", prefix]) == 1
    assert main(["import", export, "--url", bare_server.url, "--into-prefix", prefix]) == 1  # the same refusal again
    assert bare.keys("*") == []
    bare.close()


def test_demo_json_prints_json(redis_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--json", "--url", redis_url]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["prefix"] and not report["embedded"] and {"memory", "time_travel", "stored"} <= set(report)
