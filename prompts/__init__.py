"""Prompt and few-shot files (package data), loaded with :func:`reflexion.prompts.load_prompt`."""
