"""Checks of the project as a whole rather than of one module: its docs,
deployment files, import layers and benchmark scripts."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository
