#!/usr/bin/env python3
"""Rebuild commands.txt: shell commands real coding agents ran, taken from public run logs.

Python 3 standard library only; reads bare git mirrors with `git`, never the network.

Sources (repository @ commit; what is read; agent)
  laude-institute/terminal-bench-leaderboard @ 8e1925a397d7ed859c027cc19b3a3d90c16ef8df
      results/terminal-bench-core@0.1.1/20250825_swe-agent-mini_claude-4-sonnet/**/sessions/agent.log
      mini-swe-agent 1.x driving claude-sonnet-4 on Terminal-Bench core 0.1.1 (terminal recordings)
  edobry/minsky @ 3e54e1f18bbc413643d84619716da64629822a07
      .specstory/history/*.md (SpecStory exports of Cursor agent chats; deleted after this commit)
      Cursor agent (run_terminal_cmd tool)
  yinkev/praDeep @ a67f04fca067f00c80dafdbc9e8d3b2b35dd1056
      .automaker/features/*/agent-output.md (Automaker run logs; feature.json names the model)
      Codex CLI (codex-gpt-5.2) and Claude Code (opus / sonnet)

Getting the mirrors: any bare or normal clone that holds the commit works, e.g.
    git clone --bare https://github.com/laude-institute/terminal-bench-leaderboard MIRRORS/laude-institute+terminal-bench-leaderboard/repo
    git clone --bare https://github.com/edobry/minsky            MIRRORS/edobry+minsky/repo
    git clone --bare https://github.com/yinkev/praDeep           MIRRORS/yinkev+praDeep/repo
(the layout `MIRRORS/<owner>+<name>/repo` is the one the workplace `fetch` tool produces; default
MIRRORS is /work/.mirror). The copies these were built from lacked blobs of 4 MiB and more, so such
blobs are skipped here too (none of the files read is that large; the rule keeps runs identical).

Usage:  python3 extract.py [--mirrors DIR] [--out commands.txt] [--stats]

What is kept: each command an agent issued through its shell tool, verbatim (Codex's
`/bin/zsh -lc '<script>'` wrapper is unwrapped to the script the model wrote), whitespace at
both ends trimmed. Dropped: exact duplicates (first occurrence wins, sources in the order above),
commands over 4,000 characters, commands holding control characters other than tab and newline,
commands that look like they carry a credential (see SECRET), mini-swe-agent commands the
terminal recording may have wrapped (see mini_swe_agent), and commands the one-a-line format
cannot carry: those holding a literal backslash-n (it cannot be told from an encoded newline, so
the command would be read back as a different one) and those starting with `#` (read back as a
comment). --ambiguous prints these, NUL-separated, so they can be judged verbatim apart. Newlines are written as the two
characters \\n, one command a line, like tests/benign/agent-commands.txt (a literal backslash-n
inside a command is therefore indistinguishable from a newline once read back).
"""

import argparse
import json
import os
import re
import shlex
import subprocess
import sys

MAX_LEN = 4000
MAX_BLOB = 4 * 1024 * 1024

SECRET = re.compile(
    r"((?<![A-Za-z0-9])sk-[A-Za-z0-9_-]{20,}"  # OpenAI / Anthropic style keys
    r"|sk-ant-[A-Za-z0-9_-]{10,}"
    r"|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"
    r"|AKIA[0-9A-Z]{16}|ASIA[0-9A-Z]{16}"
    r"|xox[abprs]-[A-Za-z0-9-]{10,}"
    r"|AIza[0-9A-Za-z_-]{30,}"
    r"|glpat-[A-Za-z0-9_-]{20,}"
    r"|hf_[A-Za-z0-9]{30,}"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----"
    r"|eyJ[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{20,}"  # JWT
    r"|Bearer\s+[A-Za-z0-9._~+/=-]{20,}"
    r"|(?i:(?:api[_-]?key|secret(?:_key)?|(?:access|auth|api)?[_-]?token|hashed_password|passw(?:or)?d|pwd)\s*[=:]\s*['\"]?[A-Za-z0-9/+_.-]{16,})"
    r"|://[^/\s:@]+:[^/\s@]{6,}@"  # credentials in a URL
    r"|\$argon2(?:id|i|d)?\$|\$(?:2[aby]|5|6)\$[^\s'\"]{20,}"  # password hashes
    r"|\b(?:sha1|sha256|sha512|pbkdf2[\w:-]*):[0-9a-f]{6,}:[0-9a-f]{20,}"
    r")"
)
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][AB012]|\x1b[=>78]")
SPINNER = re.compile("[\u280b\u2819\u2839\u2838\u283c\u2834\u2826\u2827\u2807\u280f]")


class Mirror:
    def __init__(self, root, repo, commit):
        owner, name = repo.split("/")
        for cand in (
            os.path.join(root, f"{owner}+{name}", "repo"),
            os.path.join(root, f"{owner}+{name}.git"),
            os.path.join(root, f"{owner}+{name}"),
            os.path.join(root, name + ".git"),
            os.path.join(root, name),
        ):
            if os.path.isdir(cand):
                self.git_dir = cand
                break
        else:
            sys.exit(f"no mirror of {repo} under {root} (see the docstring)")
        self.commit = commit

    def git(self, *args):
        out = subprocess.run(["git", "-C", self.git_dir, *args], capture_output=True, check=False)
        return out.stdout

    def files(self, prefix, pattern):
        """(path, size) of blobs under prefix whose path matches pattern, sorted by path."""
        rows = self.git("ls-tree", "-r", "-l", "-z", self.commit, "--", prefix).decode("utf-8", "replace")
        found = []
        for row in rows.split("\0"):
            if not row:
                continue
            meta, path = row.split("\t", 1)
            parts = meta.split()
            if parts[1] != "blob" or parts[3] == "-":
                continue
            if re.search(pattern, path):
                found.append((path, int(parts[3])))
        return sorted(found)

    def read(self, path):
        return self.git("show", f"{self.commit}:{path}").decode("utf-8", "replace")


def mini_swe_agent(m):
    """mini-swe-agent terminal logs: each step prints the model's reply; its one ```bash block ran.

    The log is a terminal recording, so rich wrapped long lines at the console width (the width of
    the ──── rule). A command with a line that reaches the width, or a line that plus the next
    word would have, may have been wrapped: it is dropped rather than guessed at."""
    prefix = "results/terminal-bench-core@0.1.1/20250825_swe-agent-mini_claude-4-sonnet"
    for path, size in m.files(prefix, r"/sessions/agent\.log$"):
        if size >= MAX_BLOB:
            continue
        text = ANSI.sub("", m.read(path)).replace("\r", "")
        rule = re.search(r"^(\u2500{20,})$", text, re.M)
        width = len(rule.group(1)) if rule else 160
        for step in re.finditer(r"mini-swe-agent \(step \d+, \$[\d.]+\):\n(.*?)\nUser:\n", text, re.S):
            blocks = re.findall(r"```bash\n(.*?)\n```", SPINNER.sub("", step.group(1)), re.S)
            if len(blocks) != 1:
                continue  # the agent rejects replies without exactly one block; nothing ran
            lines = blocks[0].split("\n")
            wrapped = False
            for i, line in enumerate(lines):
                if len(line) >= width - 1:
                    wrapped = True
                elif i + 1 < len(lines):
                    nxt = lines[i + 1].lstrip(" ")
                    word = nxt.split(" ")[0] if nxt else ""
                    if word and len(line) + 1 + len(word) >= width - 1 and not line.endswith(("\\", "{", "(", ":")):
                        wrapped = True
            if wrapped:
                yield None, path
                continue
            yield blocks[0], path


def specstory_cursor(m):
    """SpecStory (early 2025) exports of Cursor chats: a run_terminal_cmd call is rendered as a
    ```bash block right after a `---` separator, followed by a plain ``` output block. Blocks in
    the assistant's prose are not preceded by the separator and are not taken."""
    for path, size in m.files(".specstory/history/", r"\.md$"):
        if size >= MAX_BLOB:
            continue
        text = m.read(path)
        for hit in re.finditer(r"(?:^|\n)---\n\n```bash\n", text):
            end = text.find("\n```", hit.end())
            if end < 0 or not text.startswith("\n```\n\n```\n", end):
                continue  # no output block after it: the user cancelled the call, nothing ran
            yield text[hit.end():end], path


def unwrap_login_shell(cmd):
    """Codex runs ["/bin/zsh", "-lc", script]; automaker prints it joined. Return script."""
    if not re.match(r"^/bin/(?:ba|z)?sh -lc ", cmd):
        return cmd
    try:
        words = shlex.split(cmd)
    except ValueError:
        return cmd
    if len(words) == 3 and words[1] == "-lc":
        return words[2]
    return cmd


def automaker(m, want):
    """Automaker agent-output.md: `🔧 Tool: Bash` then `Input: {json}` with the command."""
    dec = json.JSONDecoder()
    for path, size in m.files(".automaker/features/", r"/agent-output\.md$"):
        if size >= MAX_BLOB:
            continue
        model = None
        meta = m.read(path.rsplit("/", 1)[0] + "/feature.json")
        if meta:
            try:
                model = json.loads(meta).get("model")
            except ValueError:
                pass
        text = m.read(path)
        for hit in re.finditer("\U0001f527 Tool: Bash\nInput: ", text):
            try:
                obj, _ = dec.raw_decode(text, hit.end())
            except ValueError:
                continue
            cmd = obj.get("command") if isinstance(obj, dict) else None
            if not isinstance(cmd, str):
                continue
            codex = cmd.startswith(("/bin/zsh -lc ", "/bin/bash -lc ")) or (model or "").startswith("codex")
            if codex != (want == "codex"):
                continue
            yield unwrap_login_shell(cmd), path


SOURCES = [
    {
        "id": "mini-swe-agent/terminal-bench",
        "repo": "laude-institute/terminal-bench-leaderboard",
        "commit": "8e1925a397d7ed859c027cc19b3a3d90c16ef8df",
        "agent": "mini-swe-agent 1.x + claude-sonnet-4 (Terminal-Bench core 0.1.1 runs)",
        "read": mini_swe_agent,
    },
    {
        "id": "cursor/specstory",
        "repo": "edobry/minsky",
        "commit": "3e54e1f18bbc413643d84619716da64629822a07",
        "agent": "Cursor agent (run_terminal_cmd), exported by SpecStory",
        "read": specstory_cursor,
    },
    {
        "id": "codex-cli/automaker",
        "repo": "yinkev/praDeep",
        "commit": "a67f04fca067f00c80dafdbc9e8d3b2b35dd1056",
        "agent": "Codex CLI (codex-gpt-5.2) run by Automaker",
        "read": lambda m: automaker(m, "codex"),
    },
    {
        "id": "claude-code/automaker",
        "repo": "yinkev/praDeep",
        "commit": "a67f04fca067f00c80dafdbc9e8d3b2b35dd1056",
        "agent": "Claude Code (opus / sonnet) run by Automaker",
        "read": lambda m: automaker(m, "claude"),
    },
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mirrors", default="/work/.mirror")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "commands.txt"))
    ap.add_argument("--stats", action="store_true", help="print per-source counts to stderr")
    ap.add_argument("--ambiguous", action="store_true",
                    help="also print the commands left out for a literal backslash-n to stdout, NUL-separated")
    args = ap.parse_args()

    seen = set()
    ambiguous = []
    out = [
        "# Shell commands real coding agents issued, from public run logs (one a line; \\n is a newline).",
        "# Built by extract.py from the sources in SOURCES.md; measure.sh judges them with an allow-all policy.",
        "# `# source: <id>` lines start each source's block; exact duplicates are kept only at their first source.",
    ]
    for src in SOURCES:
        m = Mirror(args.mirrors, src["repo"], src["commit"])
        stats = dict(seen=0, kept=0, dup=0, long=0, secret=0, control=0, wrapped=0, ambiguous=0, files=set())
        kept = []
        for cmd, path in src["read"](m):
            stats["seen"] += 1
            if cmd is None:
                stats["wrapped"] += 1
                continue
            cmd = cmd.replace("\r\n", "\n").strip()
            if not cmd:
                continue
            if len(cmd) > MAX_LEN:
                stats["long"] += 1
                continue
            if CONTROL.search(cmd):
                stats["control"] += 1
                continue
            if SECRET.search(cmd):
                stats["secret"] += 1
                continue
            if "\\n" in cmd or cmd.startswith("#"):
                stats["ambiguous"] += 1
                if cmd not in seen and cmd not in ambiguous:
                    ambiguous.append(cmd)
                continue
            if cmd in seen:
                stats["dup"] += 1
                continue
            seen.add(cmd)
            kept.append(cmd)
            stats["files"].add(path)
        stats["kept"] = len(kept)
        out.append(f"# source: {src['id']} ({src['repo']}@{src['commit'][:12]}; {src['agent']})")
        out.extend(c.replace("\n", "\\n") for c in kept)
        if args.stats:
            files = len(stats.pop("files"))
            print(f"{src['id']}: {stats} from {files} files", file=sys.stderr)
    with open(args.out, "w", encoding="utf-8") as fh:
        fh.write("\n".join(out) + "\n")
    if args.ambiguous:
        sys.stdout.write("".join(c + "\0" for c in ambiguous))


if __name__ == "__main__":
    main()
