"""Placeholder: registers no command yet."""

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    return None
