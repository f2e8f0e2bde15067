#!/usr/bin/env bash
# How often the shell judge prompts on commands real coding agents ran.
#
#   tests/benign/real-agents/measure.sh [PORTCULLIS_BINARY [CORPUS]]
#
# Judges every command of commands.txt (one a line, \n a newline, `#` lines skipped) with
# `portcullis policy check --json` under a policy that allows every program and every path, from
# an empty scratch project folder, then prints how many prompt, with the causes grouped by the
# kind words of the JSON reasons. With everything allowed, what still prompts is the judge's own
# doing: constructs it cannot see through, words computed at run time, text that does not parse,
# or protected places (.git, .cursor, ...), which are counted as their own causes. Built-in
# denials (secret files such as .env*, *.key, *.pem; the hub's own data) are counted apart.
# A command can have several causes: the first table counts each prompt once, by the reason that
# decided it; the second counts every cause a prompting command had.
set -euo pipefail

bin=${1:-portcullis}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
corpus=${2:-$here/commands.txt}
if ! command -v "$bin" >/dev/null 2>&1; then
    echo "measure.sh: no portcullis binary at '$bin'" >&2
    exit 2
fi
bin=$(command -v "$bin")

scratch=$(mktemp -d "${TMPDIR:-/tmp}/pc-real-agents.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
mkdir "$scratch/project"
policy=$scratch/allow-all.json
cat >"$policy" <<'EOF'
{"commands": {"default": "allow"}, "paths": {"roots": [{"path": "/", "access": "write"}]}}
EOF
# The policy must load (lint exits 1 on warnings, 2 when the policy cannot be read).
(cd "$scratch/project" && "$bin" policy lint --policy "$policy" >/dev/null) || {
    echo "measure.sh: the allow-all policy does not lint cleanly with $bin" >&2
    exit 2
}

BIN=$bin POLICY=$policy PROJECT=$scratch/project CORPUS=$corpus python3 - <<'PY'
import collections, json, os, re, subprocess, sys

BIN, POLICY, PROJECT, CORPUS = (os.environ[k] for k in ("BIN", "POLICY", "PROJECT", "CORPUS"))

commands = []  # (source, command)
source = "(no source line)"
with open(CORPUS, encoding="utf-8") as fh:
    for line in fh:
        line = line.rstrip("\n")
        if line.startswith("# source: "):
            source = line[len("# source: "):].split(" ", 1)[0]
            continue
        if not line.strip() or line.startswith("#"):
            continue
        commands.append((source, line.replace("\\n", "\n")))

DEFAULT = re.compile(r"no rule matches; the default is allow$")


def cause(reason):
    """The kind of a reason, without the command's own words."""
    m = re.match(r"(\w+) cannot be judged statically", reason)
    if m:
        return f"opaque: {m.group(1)}"
    if "has words computed at run time" in reason:
        return "words computed at run time"
    if "does not parse cleanly" in reason:
        return "does not parse cleanly"
    if "changes to a folder known only at run time" in reason:
        return "cd to a folder known only at run time"
    if "a path known only when the command runs" in reason:
        return "operand path known only at run time"
    m = re.search(r"matches the deny glob (\"[^\"]*\")", reason)
    if m:
        return f"built-in deny glob {m.group(1)}"
    m = re.search(r"\(deny glob (\"[^\"]*\")\)", reason)
    if m:
        return f"whole-tree access over a deny glob {m.group(1)}"
    if "hub's data folder" in reason or "hub's credentials" in reason:
        return "hub data folder"
    m = re.match(r"(?:writes|reads|creates|deletes|executes|runs) \S+ \((.+?)\): ", reason, re.S)
    if m:
        return f"protected place: {m.group(1)}"
    m = re.search(r" names .+?: ([^:]+): allowed programs", reason, re.S)
    if m:
        return f"protected place: {m.group(1)}"
    text = re.sub(r"`[^`]*`", "`…`", reason)
    text = re.sub(r"/[^\s:,()]+", "/…", text)
    return "other: " + text.split("\n")[0][:100]


decisions = collections.Counter()
by_source = collections.defaultdict(collections.Counter)
primary = {"prompt": collections.Counter(), "forbidden": collections.Counter()}
anycause = collections.Counter()
failures = []
for i, (src, cmd) in enumerate(commands, 1):
    run = subprocess.run(
        [BIN, "policy", "check", "--json", "--policy", POLICY, "--cwd", PROJECT, "--", cmd],
        cwd=PROJECT, capture_output=True, text=True,
    )
    try:
        res = json.loads(run.stdout)
        decision = res["decision"]
    except (ValueError, KeyError):
        failures.append((cmd, run.returncode, run.stderr.strip()[-200:]))
        decision = "error"
        res = {}
    decisions[decision] += 1
    by_source[src][decision] += 1
    if decision in primary:
        deciding = res.get("deciding_reason") or next(
            (r for r in res.get("reasons", []) if not DEFAULT.search(r)), "(no reason given)")
        primary[decision][cause(deciding)] += 1
    if decision == "prompt":
        for c in {cause(r) for r in res.get("reasons", []) if not DEFAULT.search(r)}:
            anycause[c] += 1
    if i % 1000 == 0:
        print(f"... {i} judged", file=sys.stderr)

total = len(commands)
prompts = decisions["prompt"]
pct = lambda n, d: f"{100 * n / d:5.1f}%" if d else "   - "
print(f"binary:    {BIN}")
print(f"corpus:    {CORPUS}")
print(f"total:     {total}")
print(f"prompt:    {prompts} ({pct(prompts, total).strip()})")
for d in sorted(decisions):
    if d != "prompt":
        print(f"{d + ':':<10} {decisions[d]} ({pct(decisions[d], total).strip()})")
print()
print("by source (prompts / commands):")
for src, c in by_source.items():
    n = sum(c.values())
    extra = "".join(f", {k} {v}" for k, v in sorted(c.items()) if k not in ("allow", "prompt"))
    print(f"  {src:<32} {c['prompt']:>5} / {n:<5} {pct(c['prompt'], n)}{extra}")
print()
print("prompts by deciding cause (count, share of prompts, share of all):")
for k, v in primary["prompt"].most_common():
    print(f"  {v:>5}  {pct(v, prompts)}  {pct(v, total)}  {k}")
print()
print("every cause a prompting command had (count, share of prompts):")
for k, v in anycause.most_common():
    print(f"  {v:>5}  {pct(v, prompts)}  {k}")
if primary["forbidden"]:
    print()
    print("forbidden (built-in denials the allow-all policy does not lift), by deciding cause:")
    for k, v in primary["forbidden"].most_common():
        print(f"  {v:>5}  {pct(v, total)} of all  {k}")
if failures:
    print()
    print(f"{len(failures)} commands were not judged (no JSON); first ones:")
    for cmd, rc, err in failures[:5]:
        print(f"  rc={rc} {cmd[:80]!r}: {err}")
PY
