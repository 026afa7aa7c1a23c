"""Renderers: one small file per dialect over the shared printer (expr.py)."""
