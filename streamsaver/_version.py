"""The package version, in a module of its own: tools below the package root (the export file
records the writer's version) read it without importing the root, which names every shell."""

__version__ = "0.1.0"
