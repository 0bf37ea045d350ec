"""``streamsaver doctor`` against the embedded server, and the savers' readiness ``ping``."""

from __future__ import annotations

import io
import json

import pytest
import redis

from streamsaver import AsyncStreamSaver, StreamSaver
from streamsaver.cli.main import main
from streamsaver.demo import run_demo
from streamsaver.errors import ServerUnavailableError
from streamsaver.server.embedded import free_port


@pytest.fixture(scope="module")
def deployment(redis_url: str) -> str:
    return run_demo(redis_url, out=io.StringIO()).prefix


def _doctor(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict]:
    code = main(["doctor", *argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_doctor_reports_every_check_and_exits_by_the_worst(
    redis_url: str, deployment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, report = _doctor(capsys, "--url", redis_url, "--prefix", deployment)

    checks = {f["check"] for f in report["findings"]}
    assert {"server", "modules", "eviction", "aof", "replicas", "indexes", "partitions", "inline views", "feeds",
            "dead letters", "other deployments", "acl"} <= checks
    assert code == {"ok": 0, "error": 1, "warning": 3}[report["severity"]]
    assert all(f["severity"] == "ok" for f in report["findings"] if f["check"] in ("modules", "partitions"))


def test_an_evicting_server_is_an_error(redis_url: str, deployment: str, capsys: pytest.CaptureFixture[str]) -> None:
    client = redis.Redis.from_url(redis_url)
    client.config_set("maxmemory-policy", "allkeys-lru")
    try:
        code, report = _doctor(capsys, "--url", redis_url, "--prefix", deployment)
    finally:
        client.config_set("maxmemory-policy", "noeviction")
    assert code == 1 and report["severity"] == "error"
    assert any(f["check"] == "eviction" and f["severity"] == "error" for f in report["findings"])


def test_a_lenient_aof_load_is_a_warning(redis_url: str, deployment: str, capsys: pytest.CaptureFixture[str]) -> None:
    client = redis.Redis.from_url(redis_url)
    was = client.config_get("aof-load-truncated")["aof-load-truncated"]
    reports = {}
    try:
        for setting in ("no", "yes"):
            client.config_set("aof-load-truncated", setting)
            reports[setting] = _doctor(capsys, "--url", redis_url, "--prefix", deployment)
    finally:
        client.config_set("aof-load-truncated", was)

    def lenient(report: dict) -> list[str]:
        return [f["severity"] for f in report["findings"] if "aof-load-truncated" in f["detail"]]

    assert lenient(reports["no"][1]) == [] and lenient(reports["yes"][1]) == ["warning"]
    assert reports["yes"][0] in (1, 3)


def test_no_deployment_is_an_error_and_the_text_output_names_it(
    redis_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["doctor", "--url", redis_url, "--prefix", "nobody-here"]) == 1
    out = capsys.readouterr().out
    assert "no streamsaver deployment under prefix 'nobody-here'" in out and "worst: error" in out


def test_doctor_help_documents_the_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", "--help"]) == 0
    assert "3 warnings" in capsys.readouterr().out.replace("\n", " ")


def test_ping_answers_quickly_and_names_a_down_server(redis_url: str) -> None:
    with StreamSaver.from_conn_string(redis_url) as saver:
        assert 0 <= saver.ping() < 1
    down_url = f"redis://127.0.0.1:{free_port()}"
    with StreamSaver.from_conn_string(down_url, cluster=False) as down, pytest.raises(ServerUnavailableError):
        down.ping()


async def test_async_ping(redis_url: str) -> None:
    async with AsyncStreamSaver.from_conn_string(redis_url) as saver:
        assert await saver.ping() < 1
    async with AsyncStreamSaver.from_conn_string(f"redis://127.0.0.1:{free_port()}", cluster=False) as down:
        with pytest.raises(ServerUnavailableError):
            await down.ping()
