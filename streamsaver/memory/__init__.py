"""The store's shells: `StreamStore` (sync.py) and `AsyncStreamStore` (aio.py), LangGraph
``BaseStore``s that only pick a driver for the programs of `streamsaver.store`."""
