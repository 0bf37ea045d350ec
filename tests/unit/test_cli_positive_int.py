"""Counts on the command line (`inspect --limit`, `reembed --dims`) are refused below 1 by argparse,
before any connection is made."""

from __future__ import annotations

import pytest

from streamsaver.cli.main import main


@pytest.mark.parametrize("argv", [["inspect", "--store", "--limit", "0"], ["reembed", "--dims", "-3"]])
def test_a_count_below_one_is_a_usage_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*argv, "--url", "redis://127.0.0.1:1/0"]) == 2
    assert "must be 1 or more" in capsys.readouterr().err
