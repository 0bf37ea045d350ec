"""Security: least-privilege ACL users, refusal of users without rights, and TLS.

* The runtime user's ``ACL SETUSER`` line in docs/security.md (read from the file, so the docs
  stay true), once the deployment is set up, is enough for every saver operation, on both views,
  with ``durability="aof"``, and with a TTL for the upkeep methods (pinning, delta history,
  copy_thread, prune, retain, delete_for_runs). Tenant isolation: test_tenant_isolation.py.
* A user whose keys are another prefix's is refused at setup with a `ConfigurationError` naming
  the missing permission; a user who may read the deployment but not append to its streams is
  refused at the first append with a ``ResponseError`` saying "ACL failure in script: ... no
  permissions to run the 'xadd' command", and nothing is written.
* TLS: a saver reaches Redis through ``rediss://`` (a TLS terminator, `tls_terminator.py`, in
  front of the embedded server, which is built without TLS, with a throw-away self-signed
  certificate made by ``openssl``); a client that does not trust the certificate is refused.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

import pytest
import redis
from helpers import config, new_checkpoint, snapshot
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoPermissionError, ResponseError
from tls_terminator import TlsTerminator

from streamsaver import StreamSaver
from streamsaver.errors import ConfigurationError

DOCS = Path(__file__).parents[2] / "docs" / "security.md"


def documented_acl_rules(prefix: str) -> list[str]:
    """The rules of the docs' runtime ``ACL SETUSER streamsaver on >PASSWORD ...`` line, for `prefix`."""
    match = re.search(r"ACL SETUSER streamsaver on >PASSWORD (.+)", DOCS.read_text())
    assert match, "docs/security.md gives no runtime ACL SETUSER line"
    return match.group(1).strip().strip("`").replace("~streamsaver:", f"~{prefix}:").split()


@pytest.fixture
def acl_user(client: redis.Redis) -> Iterator[tuple[str, str]]:
    name, password = f"ss-{uuid.uuid4().hex[:8]}", uuid.uuid4().hex
    yield name, password
    client.execute_command("ACL", "DELUSER", name)


def _exercise(saver: StreamSaver) -> None:
    saver.setup()
    checkpoint, versions = new_checkpoint({"a": 1})
    saved = saver.put(config("t1"), checkpoint, {"k": "v"}, versions)
    saver.put_writes(saved, [("a", 2)], "task")
    got = saver.get_tuple(saved)
    assert got is not None and got.pending_writes == [("task", "a", 2)]
    assert [t.config for t in saver.list(config("t1"))] == [saved]
    assert [t.config for t in saver.list(None, filter={"k": "v"})] == [saved]
    saver.delete_thread("t1")
    assert saver.get_tuple(saved) is None


def _exercise_upkeep(saver: StreamSaver) -> None:
    """TTL, pinning, delta history and the log rewrites (copy, prune, retain, runs)."""
    checkpoint, versions = new_checkpoint({"a": 1})
    saved = saver.put(config("t1"), checkpoint, {"run_id": "r1"}, versions)
    saver.put_writes(saved, [("a", 2)], "task")
    assert saver.get_tuple(config("t1")) is not None
    assert saver.get_delta_channel_history(config=saved, channels=["a"]) == {"a": {"writes": []}}
    saver.pin_thread("t1")
    saver.unpin_thread("t1")
    saver.copy_thread("t1", "t2")
    saver.prune(["t2"])
    saver.retain(["t2"], keep_last=1)
    saver.delete_for_runs(["r1"])
    assert saver.get_tuple(config("t1")) is None and saver.get_tuple(config("t2")) is None


@pytest.mark.parametrize("view", ["full", "shallow"])
def test_the_documented_acl_line_is_enough_for_the_saver(
    client: redis.Redis, redis_url: str, prefix: str, acl_user: tuple[str, str], view: str
) -> None:
    name, password = acl_user
    StreamSaver(client, prefix=prefix, view=view).setup()  # as the admin user (`streamsaver setup`)
    client.execute_command("ACL", "SETUSER", name, "on", f">{password}", *documented_acl_rules(prefix))
    limited = redis.Redis.from_url(redis_url, username=name, password=password)
    try:
        with pytest.raises(NoPermissionError):
            limited.get("not-the-deployments-key")
        with pytest.raises(NoPermissionError):
            limited.execute_command("FLUSHALL")
        _exercise(StreamSaver(limited, prefix=prefix, view=view, durability="aof"))
        _exercise_upkeep(StreamSaver(limited, prefix=prefix, view=view, default_ttl=1, refresh_on_read=True))
    finally:
        limited.close()


def test_a_user_of_another_prefix_is_refused_at_setup(
    client: redis.Redis, redis_url: str, prefix: str, acl_user: tuple[str, str]
) -> None:
    name, password = acl_user
    client.execute_command("ACL", "SETUSER", name, "on", f">{password}", *documented_acl_rules("elsewhere"))
    limited = redis.Redis.from_url(redis_url, username=name, password=password)
    try:
        with pytest.raises(ConfigurationError, match=r"(?i)no permissions"):
            StreamSaver(limited, prefix=prefix).setup()
    finally:
        limited.close()
    assert snapshot(client, prefix) == {}


def test_a_user_who_may_not_append_to_streams_is_refused_and_nothing_is_written(
    client: redis.Redis, redis_url: str, prefix: str, acl_user: tuple[str, str]
) -> None:
    owner = StreamSaver(client, prefix=prefix)
    checkpoint, versions = new_checkpoint({"a": 1})
    saved = owner.put(config("t1"), checkpoint, {}, versions)
    before = snapshot(client, prefix)
    name, password = acl_user
    rules = [*documented_acl_rules(prefix), "-xadd"]
    client.execute_command("ACL", "SETUSER", name, "on", f">{password}", *rules)
    reader = redis.Redis.from_url(redis_url, username=name, password=password)
    try:
        saver = StreamSaver(reader, prefix=prefix)
        saver.setup()
        got = saver.get_tuple(saved)
        assert got is not None and got.checkpoint["channel_values"] == {"a": 1}
        second, versions = new_checkpoint({"a": 2}, checkpoint)
        with pytest.raises(ResponseError, match=r"ACL failure in script.*no permissions to run the 'xadd'"):
            saver.put(saved, second, {}, versions)
        with pytest.raises(ResponseError, match=r"ACL failure in script.*no permissions to run the 'xadd'"):
            saver.put_writes(saved, [("a", 3)], "task")
    finally:
        reader.close()
    assert snapshot(client, prefix) == before


# -- TLS ------------------------------------------------------------------------------------------


@pytest.fixture
def tls_url(redis_url: str, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A ``rediss://`` URL served by a TLS terminator in front of the test server, and the
    certificate (self-signed for localhost) that verifies it."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("the TLS test makes its certificate with openssl (apt-get install openssl)")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
         "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )
    upstream = urlparse(redis_url).port
    assert upstream is not None
    with TlsTerminator(cert, key, upstream) as terminator:
        yield f"rediss://localhost:{terminator.port}/0", cert


def test_a_saver_works_over_tls_and_an_untrusted_certificate_is_refused(tls_url: tuple[str, Path], prefix: str) -> None:
    url, cert = tls_url
    secure = redis.Redis.from_url(url, ssl_ca_certs=str(cert))
    try:
        _exercise(StreamSaver(secure, prefix=prefix))
    finally:
        secure.close()
    with StreamSaver.from_conn_string(f"{url}?ssl_ca_certs={cert}", prefix=prefix) as saver:
        _exercise(saver)
    untrusted = redis.Redis.from_url(url)
    try:
        with pytest.raises(RedisConnectionError, match="certificate verify failed"):
            untrusted.ping()
    finally:
        untrusted.close()
