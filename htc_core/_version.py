"""The package version (a leaf module: importing it loads nothing else of htc_core)."""

__version__ = "0.1.0"
