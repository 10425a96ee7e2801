"""The SDK's version: the single source of truth (read by the build backend too)."""

__version__ = "0.1.0"
