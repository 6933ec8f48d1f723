#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Manual pages for ``gpuadvisor`` and ``gpuadvisor-cli``, generated from their argparse parsers.

    python packaging/manpages.py OUT_DIR

Writes ``OUT_DIR/gpuadvisor.1`` and ``OUT_DIR/gpuadvisor-cli.1`` (man(7) macros). The parsers
are the programs' own (``gpuadvisor.__main__.build_parser``, ``gpuadvisor.cli.build_parser``), so
a page can never describe an option the program lacks. ``packaging/build.py`` compresses them
into the .deb's ``/usr/share/man/man1``.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

ENVIRONMENT = (
    (
        "GPUADVISOR_HOME",
        "Keep every user file (settings, log, catalog edits, measurements) in this folder "
        "instead of the platform's user folders (portable mode).",
    ),
    (
        "QT_QPA_PLATFORM",
        "The Qt platform plugin: xcb (X11, the default), wayland, or offscreen (no display).",
    ),
)
FILES = (
    ("~/.config/gpuadvisor/", "settings, catalog edits and measurements"),
    ("~/.local/state/gpuadvisor/log/gpuadvisor.log", "the log"),
    ("/usr/share/doc/gpuadvisor/", "the README, the license and the third-party notices"),
)


def esc(text: str) -> str:
    """Text for a roff line: backslashes and hyphens escaped, no leading control character."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\\&" + text if text.startswith((".", "'")) else text


def _option_lines(parser: argparse.ArgumentParser) -> list[str]:
    lines = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) or action.help == argparse.SUPPRESS:
            continue
        if action.option_strings:
            metavar = ""
            if action.nargs != 0:
                metavar = (
                    " " + (action.metavar or action.dest.upper())
                    if not action.choices
                    else " {" + ",".join(str(c) for c in action.choices) + "}"
                )
            label = ", ".join(f"\\fB{esc(o)}\\fR{esc(metavar)}" for o in action.option_strings)
        else:
            label = f"\\fI{esc(action.metavar or action.dest)}\\fR"
        text = (action.help or "") % {"default": action.default, "prog": parser.prog} if action.help else ""
        lines += [".TP", label, esc(text)]
    return lines


def _subcommands(parser: argparse.ArgumentParser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            for name, sub in action.choices.items():
                yield name, helps.get(name, ""), sub


def page(
    parser: argparse.ArgumentParser, name: str, summary: str, see_also: str, date: str, version: str
) -> str:
    """A whole man(7) page for ``parser``."""
    out = [
        f'.TH {esc(name.upper())} 1 "{date}" "gpuadvisor {version}" "User Commands"',
        ".SH NAME",
        f"{esc(name)} \\- {esc(summary)}",
        ".SH SYNOPSIS",
        ".nf",
        esc(parser.format_usage().replace("usage: ", "").strip()),
        ".fi",
        ".SH DESCRIPTION",
        esc(parser.description or summary),
    ]
    options = _option_lines(parser)
    if options:
        out += [".SH OPTIONS", *options]
    subs = list(_subcommands(parser))
    if subs:
        out.append(".SH COMMANDS")
        for sub_name, sub_help, sub in subs:
            out += [
                ".SS " + esc(f"{name} {sub_name}"),
                esc(sub_help or sub.description or ""),
                ".PP",
                ".nf",
                esc(sub.format_usage().replace("usage: ", "").strip()),
                ".fi",
            ]
            nested = list(_subcommands(sub))
            for nested_name, nested_help, nested_parser in nested:
                out += [
                    ".TP",
                    f"\\fB{esc(nested_name)}\\fR",
                    esc(nested_help or ""),
                    ".nf",
                    esc(nested_parser.format_usage().replace("usage: ", "").strip()),
                    ".fi",
                ]
                out += _option_lines(nested_parser)
            if not nested:
                out += _option_lines(sub)
    out += [".SH ENVIRONMENT"]
    for var, text in ENVIRONMENT:
        out += [".TP", f"\\fB{esc(var)}\\fR", esc(text)]
    out += [".SH FILES"]
    for path, text in FILES:
        out += [".TP", f"\\fI{esc(path)}\\fR", esc(text)]
    if parser.epilog:
        out += [".SH NOTES", esc(parser.epilog)]
    out += [".SH SEE ALSO", see_also]
    return "\n".join(out) + "\n"


def write_pages(out_dir: Path) -> list[Path]:
    sys.path.insert(0, str(ROOT))
    from gpuadvisor import __version__
    from gpuadvisor.__main__ import build_parser as window_parser
    from gpuadvisor.cli import build_parser as cli_parser

    # SOURCE_DATE_EPOCH keeps the pages reproducible (the date printed in their footer).
    date = datetime.datetime.fromtimestamp(
        int(os.environ.get("SOURCE_DATE_EPOCH", "0")) or datetime.datetime.now().timestamp(),
        datetime.UTC,
    )
    day = date.strftime("%Y-%m-%d")
    out_dir.mkdir(parents=True, exist_ok=True)
    pages = {
        "gpuadvisor": page(
            window_parser(),
            "gpuadvisor",
            "will a model fit on a GPU, how fast, at what cost (desktop window)",
            "\\fBgpuadvisor\\-cli\\fR(1)",
            day,
            __version__,
        ),
        "gpuadvisor-cli": page(
            cli_parser(),
            "gpuadvisor-cli",
            "GPU sizing for AI workloads from the command line",
            "\\fBgpuadvisor\\fR(1)",
            day,
            __version__,
        ),
    }
    written = []
    for name, text in pages.items():
        path = out_dir / f"{name}.1"
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__.split("\n\n")[1].strip())
    for p in write_pages(Path(sys.argv[1])):
        print(p)
