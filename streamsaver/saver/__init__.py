"""The savers: `StreamSaver` (sync) and `AsyncStreamSaver` (asyncio) over one `SaverCore`."""
