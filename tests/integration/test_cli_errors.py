"""The CLI reports an operator's mistake or a failing server as one line on stderr, with the
exit code its ``--help`` documents, never a traceback."""

from __future__ import annotations

import io

import pytest

from streamsaver.cli.main import build_parser, main
from streamsaver.demo import run_demo


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

