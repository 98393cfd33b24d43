"""Helpers of scripts/make_docs.py (``make docs``)."""
