#!/usr/bin/env python3
"""The repository's commit messages keep the project's form (docs/testing.md): a subject
of at most 72 characters, then, when there is more to say, a blank line and the body.

  check_commits.py [REPO]

Checks every commit after SINCE on the current branch (the commits before it were not
held to this rule and are history). Exit 0 when all keep the form, 1 naming each that
does not, 77 (skipped) outside a git checkout or when SINCE is not in the history (a
shallow clone).
"""

from __future__ import annotations

import subprocess
import sys

SUBJECT_MAX = 72
SINCE = "f291bc3"  # the last commit whose subject the rule did not hold


def git(repo: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True)


def main() -> int:
    repo = sys.argv[1] if len(sys.argv) > 1 else "."
    if git(repo, "rev-parse", "--git-dir").returncode != 0:
        print("check_commits: not a git checkout; skipped")
        return 77
    if git(repo, "cat-file", "-e", f"{SINCE}^{{commit}}").returncode != 0:
        print(f"check_commits: {SINCE} is not in this history (shallow?); skipped")
        return 77
    log = git(repo, "log", "--format=%h%x00%B%x01", f"{SINCE}..HEAD").stdout
    bad = []
    n = 0
    for entry in filter(str.strip, log.split("\x01")):
        sha, message = entry.strip("\n").split("\x00", 1)
        lines = message.rstrip("\n").split("\n")
        n += 1
        if len(lines[0]) > SUBJECT_MAX:
            bad.append(f"{sha}: subject of {len(lines[0])} characters: {lines[0][:60]}...")
        elif len(lines) > 1 and lines[1].strip():
            bad.append(f"{sha}: no blank line between the subject and the body")
    for line in bad:
        print(line)
    print(f"check_commits: {n} commits after {SINCE}, {len(bad)} not in the form")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
