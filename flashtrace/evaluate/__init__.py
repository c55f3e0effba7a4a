"""Faithfulness evaluation: synthetic tasks with gold spans, baselines, deletion metrics, reports."""

from .tasks import TASKS, Example, load_jsonl, make_example

__all__ = ["TASKS", "Example", "make_example", "load_jsonl"]
