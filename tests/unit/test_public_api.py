"""The public surface is pinned: changing it is a decision, not an accident."""

from __future__ import annotations

import streamsaver
import streamsaver.errors
import streamsaver.log.events


def test_package_exports() -> None:
    assert sorted(streamsaver.__all__) == [
        "AsyncShallowStreamSaver", "AsyncStreamSaver", "AsyncStreamStore", "SafeSerializer", "ShallowStreamSaver",
        "StreamSaver", "StreamStore", "Subscriber", "__version__",
    ]
    for name in streamsaver.__all__:
        assert getattr(streamsaver, name) is not None


def test_error_tree() -> None:
    e = streamsaver.errors
    assert sorted(e.__all__) == sorted(
        ["ConcurrentChangeError", "ConfigurationError", "DurabilityError", "EmbeddedServerError", "EventDecodeError",
         "EvictionPolicyError", "IndexConfigMismatchError", "IndexMissingError", "IndexNotReadyError",
         "InlineViewsError", "MiddlewareConfigError",
         "ExportFileError", "InvalidInputError", "MissingModuleError", "PayloadDecodeError", "ReplayJobError",
         "ServerTimeoutError", "ServerUnavailableError", "SettingsLostError", "SlotLeftImportingError",
         "StaleWriteOwnerError",
         "StreamSaverError", "TargetNotEmptyError", "ThreadExistsError", "WrongKeyTypeError"]
    )
    assert e.StaleWriteOwnerError.is_stale_write_owner_error is True
    assert issubclass(e.InvalidInputError, ValueError)
    assert issubclass(e.MissingModuleError, e.ConfigurationError)
    assert issubclass(e.IndexConfigMismatchError, e.ConfigurationError)
    assert issubclass(e.IndexMissingError, e.ConfigurationError)
    assert issubclass(e.InlineViewsError, e.ConfigurationError)
    assert issubclass(e.ServerTimeoutError, e.ServerUnavailableError)
    assert issubclass(e.ServerTimeoutError, TimeoutError) and issubclass(e.ServerUnavailableError, ConnectionError)
    assert all(issubclass(getattr(e, n), e.StreamSaverError) for n in e.__all__)


def test_event_types() -> None:
    assert {"CheckpointSaved", "WritesSaved", "ThreadDeleted", "ThreadCopied", "ThreadPruned", "RunsDeleted",
            "ValuesRetained", "ItemPut", "ItemDeleted", "StorePartitionErased"} <= set(streamsaver.log.events.__all__)
