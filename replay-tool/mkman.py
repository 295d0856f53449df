#!/usr/bin/env python3
"""Write replay-vm.1 from the tool's own help: `replay-vm --help` and each
command's `--help`, so the man page says what the binary does.

  replay-tool/mkman.py replay-tool/replay-vm > replay-vm.1
"""
import re
import subprocess
import sys


def run(tool, *args):
    return subprocess.run([tool, *args], capture_output=True, text=True, check=True).stdout


def roff(text):
    """text shown as it is: escapes, and no line taken for a request"""
    out = []
    for line in text.rstrip("\n").splitlines():
        line = line.replace("\\", "\\e").replace("-", "\\-")
        if line.startswith((".", "'")):
            line = "\\&" + line
        out.append(line)
    return "\n".join(out)


def main():
    tool = sys.argv[1]
    version = run(tool, "--version").split()[-1]
    top = run(tool, "--help")
    commands = re.findall(r"^  ([a-z][a-z-]*)\s+\S", top.split("commands:", 1)[1].split("\n\n", 1)[0], re.M)
    page = ['.TH REPLAY-VM 1 "" "replay-vm %s" "User Commands"' % version,
            ".SH NAME",
            "replay-vm \\- record and replay whole multiprocessor virtual machines",
            ".SH SYNOPSIS",
            ".B replay-vm",
            ".I COMMAND",
            "[ARGS...]",
            ".br",
            ".B replay-vm \\-\\-log",
            ".I run.rr",
            "[OPTIONS]",
            ".SH DESCRIPTION",
            ".nf", roff(top), ".fi",
            ".SH COMMANDS"]
    for c in commands:
        if c == "version":
            continue
        page += [".SS %s" % c, ".nf", roff(run(tool, c, "--help")), ".fi"]
    page += [".SH SEE ALSO",
             "The project's README.md and docs/ (architecture, CREW modes, log format)."]
    sys.stdout.write("\n".join(page) + "\n")


if __name__ == "__main__":
    main()
