#!/usr/bin/env bash
# The Faithful suite: do real workloads give byte-identical trees with and without Portcullis's
# copy-on-write write roots?
#
# For each workload: a fresh project folder (and a fresh home folder) are made by the workload's setup,
# run directly; then its steps run (a) directly with `bash -c`, and after a second identical setup (b)
# each through `portcullis call shell` (confined: each step's writes go to an overlay and are committed
# by the hub's review). Both runs use the SAME absolute paths ($W/proj, $W/home; each run's folders are
# renamed aside when it ends), so paths a tool writes into its files (venv scripts, pip's records,
# cargo's dep-info) are the same. Then the two project trees' digests (tests/faithful/tree_digest.py:
# every path, its type, mode bits, owner, a file's sha256, a symlink's target, hard-link groups, xattrs)
# are compared: one line per workload, `ok` or `DIFFERENT` with the first differing paths. Also
# DIFFERENT: a step whose exit code differs between the runs, or a step Portcullis did not run confined
# (blocked, no `[exit code: N]`, a sandbox failure). Lines starting `note:` are not failures: a step's
# output that differs (the outputs are compared with Portcullis's own `[...]` lines taken out), what the
# review discarded, a file whose content is the same but whose allocation differs (a sparse file made
# dense), a workload's post-check (run directly in both finished trees) whose output differs.
#
# Usage: tests/faithful/run.sh [WORKLOAD...]        (default: all; exit 1 if any is DIFFERENT)
#   PORTCULLIS=/path/to/portcullis  the binary (default /tmp/pc-bin2/portcullis; this script never builds)
#   FAITHFUL_TMP=/var/tmp           where the scratch folder goes (the 1 GB workload needs ~4 GB free);
#                                   not /tmp: confined commands get a private /tmp
#   FAITHFUL_KEEP=1                 keep the scratch folder (it is printed)
#   FAITHFUL_SHOW=N                 differing paths shown per workload (default 8)
# Needs: bash, python3, git, npm/node, cargo+rustc (the toolchain's own bin folder is used, no rustup
# proxy), coreutils; no network (everything is in tests/faithful/fixtures).
#
# Normalised, not excluded (so the runs can be compared at all):
#   - the environment: both runs start from the same few variables (Portcullis hands a command only
#     HOME, LANG, PATH, PWD, SHELL, SHLVL, TERM, TMPDIR): HOME=$W/home and PATH=<toolchain>/bin:/usr/
#     local/bin:/usr/bin:/bin (no ~/.pyenv shims or ~/.cargo/bin, which a confined command cannot read)
#     are given to `bash` / to `portcullis call` (an `export HOME=`/`PATH=` in the command is a prompt:
#     "makes programs load other code"); every step then begins with one `export` line of variables
#     the policy reviewed as inert: TZ, LC_ALL, SOURCE_DATE_EPOCH (pip compiles checked-hash .pyc files
#     instead of ones stamped with the time), GIT_AUTHOR_*/GIT_COMMITTER_* with fixed dates (commit
#     ids, reflogs, packs are then equal), CARGO_INCREMENTAL=0 (incremental session folders are named
#     from the clock and randomness), CARGO_TERM_COLOR; and `set -o pipefail`.
#   - timing text in a step's output (npm's "added N packages in 350ms", test run times) is cut by a
#     `sed` in the step itself (outputs are compared only for notes).
#   - npm runs offline from a cache seeded by `npm cache add` of fixtures/npm/tarballs in the setup,
#     with `offline=true` in the project's own .npmrc (`--offline` on the command line is a prompt: an
#     option the policy cannot judge).
#   - the mtime of everything the setup makes is set to SOURCE_DATE_EPOCH (Python's import-time .pyc
#     files embed their source's mtime).
#   - git's index (.git/index) is hashed with its per-entry stat cache zeroed (tree_digest.py says why).
#   - cargo's target/.rustc_info.json is hashed as JSON with sorted keys (a HashMap: its order is random
#     per cargo process).
# Not compared at all:
#   - timestamps (atime, mtime, ctime): two runs at two times; a commit by rename changes ctime anyway.
#   - inode numbers and st_dev (hard links are compared as groups of paths instead).
#   - a folder's size/blocks (ext4 never shrinks a folder: history, not content).
#   - the home folder ($W/home): tools' caches and logs (npm's _logs and cache index hold times).
# Excluded from the project trees (both sides):
#   - `.portcullis` at the project's top: Portcullis's reserved folder, where the hub keeps the
#     command's copy-on-write layer (`.portcullis/changes/portcullis-cmd-*`); hidden (empty) inside
#     the sandbox, never part of the command's work. The direct run never makes it.
#
# What the policy had to allow: every command (`"default": "allow"`); the project (".") and the home
# folder as write roots; the Rust toolchain's folder as a read root (it lives under /root/.rustup).
# git: `git init` cannot be kept: the review discards a `.git` the command created (a new repository is
# a protected place whatever the policy says), so the git workload's `git init` (and its `git config`:
# `.git/config` stays read-only even for git's own writing commands) is part of the setup, run directly
# in both runs. Its other steps (add, commit, checkout -b, rebase, gc) are judged as git writing its
# repository, which makes `.git` writable (except hooks, config, info, ...) with no prompt.
#
# Workloads: git, npm, cargo, python, files, big — the issue's; replaced_tree, hardlink_write,
# hardlink_sed, dir_rename, root_mode — the smallest cases of what made a real workload DIFFERENT, and
# of overlayfs behaviour a command can see (each says what it does where it is defined).
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PORTCULLIS=${PORTCULLIS:-/tmp/pc-bin2/portcullis}
SHOW=${FAITHFUL_SHOW:-8}
EPOCH=1700000000
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)
DIGEST=("$PY" "$HERE/tree_digest.py")

[ -x "$PORTCULLIS" ] || { echo "no portcullis binary at $PORTCULLIS (set PORTCULLIS)" >&2; exit 2; }
TOOLCHAIN=$(rustc --print sysroot 2>/dev/null || true)
TOOLCHAIN=${TOOLCHAIN:+$(readlink -f "$TOOLCHAIN")}

W=$(mktemp -d "${FAITHFUL_TMP:-/var/tmp}/faithful.XXXXXX") || exit 2
W=$(readlink -f "$W")
P=$W/proj
HM=$W/home
PCH=$W/pc
mkdir -p "$PCH/config"
cleanup() { if [ "${FAITHFUL_KEEP:-}" = 1 ]; then echo "kept: $W"; else rm -rf "$W"; fi; }
trap cleanup EXIT

ROOTS="{ \"path\": \".\", \"access\": \"write\" }, { \"path\": \"$HM\", \"access\": \"write\" }"
[ -z "$TOOLCHAIN" ] || ROOTS+=", { \"path\": \"$TOOLCHAIN\", \"access\": \"read\" }"
cat >"$W/policy.json" <<EOF
{
  "commands": { "default": "allow" },
  "paths": { "roots": [ $ROOTS ] },
  "sandbox": { "limits": { "memory_mb": 4096 } }
}
EOF

# What every step starts with, in both runs: HOME and PATH in its environment (Portcullis passes its own
# HOME and PATH to the command; an `export` of them is a prompt: they make programs load other code),
# then one `export` line of variables the policy reviewed as inert.
STEP_PATH=${TOOLCHAIN:+$TOOLCHAIN/bin:}/usr/local/bin:/usr/bin:/bin
PREFIX="export TZ=UTC LC_ALL=C.UTF-8 SOURCE_DATE_EPOCH=$EPOCH"
PREFIX+=" GIT_AUTHOR_NAME=Faithful GIT_AUTHOR_EMAIL=faithful@example.invalid GIT_AUTHOR_DATE=@$EPOCH+0000"
PREFIX+=" GIT_COMMITTER_NAME=Faithful GIT_COMMITTER_EMAIL=faithful@example.invalid GIT_COMMITTER_DATE=@$EPOCH+0000"
PREFIX+=" CARGO_INCREMENTAL=0 CARGO_TERM_COLOR=never; set -o pipefail"
PREFIX+=$'\n'

# ---------------------------------------------------------------------------------------------------
# Workloads: setup_NAME (run directly, in $P, with $HM made; same for both runs), STEPS (one shell
# command each), optional post_NAME (run directly in each finished tree; its output compared: a note).

setup_git() {
  mkdir -p src docs
  printf 'alpha\nbeta\n' >a.txt
  printf 'fn main() {}\n' >src/main.rs
  printf '# Docs\n' >docs/README.md
  git init -q -b main
  git config gc.autoDetach false
  git config maintenance.auto false
}
steps_git() {
  STEPS=(
    'git add -A && git commit -q -m "first"'
    'git checkout -q -b feature && echo f1 >> a.txt && git commit -q -am "feature 1" && echo f2 > b.txt && git add b.txt && git commit -q -m "feature 2"'
    'git checkout -q main && echo m1 > c.txt && git add c.txt && git commit -q -m "main 1"'
    'git checkout -q feature && git rebase -q main && git log --format="%H %s"'
    'echo more >> docs/README.md && git commit -q -am "docs" && git gc -q --prune=now && git count-objects -v'
  )
}
# git's plumbing that trusts the index's stat cache (`git diff-files` does not refresh it; `git status`
# does), then a refresh.
post_git() { git diff-files --name-only; git status --porcelain; }

setup_npm() {
  cp "$HERE/fixtures/npm/package.json" "$HERE/fixtures/npm/package-lock.json" .
  # The project's own npm settings (`--offline` on the command line is a prompt: an option the policy
  # cannot judge): install from the cache only.
  printf 'offline=true\nprogress=false\nupdate-notifier=false\naudit=false\nfund=false\n' >.npmrc
  printf 'require("chalk");\nconsole.log(require("debug")("x").enabled, require("ms")(60000));\n' >check.js
  HOME=$HM npm cache add --no-update-notifier "$HERE"/fixtures/npm/tarballs/*.tgz >/dev/null 2>&1
}
steps_npm() {
  STEPS=(
    'npm ci | sed -E "s/ in [0-9.]+m?s$//"'
    'node check.js && node_modules/.bin/semver 1.2.3 -r ">=1"'
    'npm uninstall debug | sed -E "s/ in [0-9.]+m?s$//"'
    'npm ci | sed -E "s/ in [0-9.]+m?s$//"'
  )
}

setup_cargo() {
  mkdir -p src tests
  cat >Cargo.toml <<'EOF'
[package]
name = "faithful"
version = "0.1.0"
edition = "2021"

[dependencies]
EOF
  printf 'pub fn add(a: u64, b: u64) -> u64 {\n    a + b\n}\n' >src/lib.rs
  printf 'fn main() {\n    println!("{}", faithful::add(2, 3));\n}\n' >src/main.rs
  printf '#[test]\nfn adds() {\n    assert_eq!(faithful::add(2, 2), 4);\n}\n' >tests/add.rs
}
steps_cargo() {
  STEPS=(
    'cargo build --offline -q && ./target/debug/faithful'
    'cargo test --offline -q 2>&1 | sed -E "s/finished in [0-9.]+s/finished/"'
    'cargo build --release --offline -q && ./target/release/faithful'
  )
}

setup_python() {
  mkdir -p faithpkg tests
  cat >pyproject.toml <<'EOF'
[build-system]
requires = ["setuptools>=61", "wheel"]
build-backend = "setuptools.build_meta"

[project]
name = "faithpkg"
version = "0.1.0"

[tool.setuptools]
packages = ["faithpkg"]
EOF
  printf 'def add(a, b):\n    return a + b\n' >faithpkg/__init__.py
  printf 'import unittest\nimport faithpkg\n\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(faithpkg.add(2, 2), 4)\n' >tests/test_add.py
  : >tests/__init__.py
  mkdir -p "$HM/wheels" && cp "$HERE"/fixtures/python/*.whl "$HM/wheels/"
}
steps_python() {
  STEPS=(
    'python3 -m venv .venv'
    '.venv/bin/pip install --disable-pip-version-check --no-cache-dir --no-index --find-links ~/wheels -q wheel && .venv/bin/pip install --disable-pip-version-check --no-cache-dir --no-index --no-build-isolation -q -e .'
    '.venv/bin/python -m unittest -q 2>&1 | sed -E "s/ in [0-9.]+s$//"'
    "$(if "$PY" -c 'import pytest' 2>/dev/null; then echo '.venv/bin/python -m pytest -q -p no:cacheprovider || true'; else echo 'true'; fi)"
  )
}

# An editor's atomic save, sed -i, mv of folders, hard links, symlinks, chmod, deletions, a file
# replaced by a folder and back, a folder deleted and made again.
setup_files() {
  mkdir -p src docs notes/deep data/old data/cache data/gen tools
  printf 'v1\n' >src/app.txt
  printf 'unused\n' >src/unused.txt
  printf 'alpha one\n' >docs/a.md
  printf 'alpha two\n' >docs/b.md
  printf 'n\n' >notes/deep/n.txt
  printf 'old\n' >data/old/o.txt
  printf 'c\n' >data/cache/c.bin
  printf 'blob\n' >data/blob
  printf 'g\n' >data/gen/g.txt
  printf '#!/bin/sh\necho hi\n' >script.sh
  cat >tools/save.py <<'EOF'
import os, sys, tempfile
# An editor's save: write a temporary file beside the target, fsync, keep the mode, rename over it.
path, text = sys.argv[1], sys.argv[2]
mode = os.stat(path).st_mode & 0o7777
fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path) or ".", prefix="." + os.path.basename(path) + ".")
with os.fdopen(fd, "w") as f:
    f.write(text)
    f.flush()
    os.fsync(f.fileno())
os.chmod(tmp, mode)
os.replace(tmp, path)
EOF
}
steps_files() {
  STEPS=(
    'python3 tools/save.py src/app.txt "v2 saved by an editor\n"'
    'sed -i "s/alpha/ALPHA/" docs/a.md docs/b.md'
    'mv docs manual && mkdir -p archive && mv notes archive/notes'
    'ln manual/a.md hard-a.md && ln -s manual/b.md soft-b.md && ln -rs manual archive/manual-link && ln -s missing dangling'
    'chmod 755 script.sh && chmod 600 src/app.txt && chmod 700 archive && chmod 2775 archive/notes && mkdir shared && chmod 1777 shared'
    'rm -r data/old && rm src/unused.txt && rm -r data/cache && echo file > data/cache && rm data/blob && mkdir data/blob && echo inner > data/blob/inner'
    'rm -rf data/gen && mkdir data/gen && echo only > data/gen/only.txt'
    'cp -a manual manual-copy && touch -d @0 manual-copy/a.md && stat -c "%a %s %n" manual-copy/a.md'
  )
}

# A folder deleted with all it holds and made again with a sub-folder of the same name and mode
# (what `npm ci`, `rm -rf build && make`, a generator's clean output folder do).
setup_replaced_tree() { mkdir -p out/sub && printf 'old\n' >out/sub/old.txt; }
steps_replaced_tree() { STEPS=('rm -rf out && mkdir -p out/sub && echo new > out/sub/new.txt'); }

# A hard link made by one step, then written through by the next: `ln a b; echo more >> a`.
setup_hardlink_write() { printf 'one\n' >orig.txt; }
steps_hardlink_write() {
  STEPS=(
    'ln orig.txt twin.txt'
    'echo more >> orig.txt && cat twin.txt'
  )
}

# Two names of one file (made before the command) both rewritten by one command (`sed -i`: each name
# gets a new file, in both runs).
setup_hardlink_sed() { printf 'alpha\n' >x.txt; ln x.txt y.txt; }
steps_hardlink_sed() {
  STEPS=('sed -i "s/alpha/beta/" x.txt y.txt && cat x.txt y.txt')
}

# rename(2) of a folder that existed before the command (what `mv` does first; Python's os.rename,
# Rust's fs::rename and many build tools do only that).
setup_dir_rename() {
  mkdir -p pkg/sub && printf 'p\n' >pkg/sub/p.txt
  printf 'import os, sys\nos.rename(sys.argv[1], sys.argv[2])\n' >rename.py
}
steps_dir_rename() { STEPS=('python3 rename.py pkg pkg-renamed'); }

# What a command reads of the project folder itself: its mode (a tar of "." records it).
setup_root_mode() { printf 'x\n' >x.txt; }
steps_root_mode() {
  STEPS=(
    'stat -c "%a" . > root-mode.txt && cat root-mode.txt'
    'tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner --exclude=./snap.tar --exclude=./.portcullis -cf snap.tar . && tar -tvf snap.tar | sed -n 1p'
  )
}

# A 1 GiB file written, a 1 GiB sparse file, then one byte changed in each by later steps.
setup_big() { :; }
steps_big() {
  STEPS=(
    'dd if=/dev/zero of=big bs=1M count=1024 status=none && stat -c "%s" big'
    'truncate -s 1G sparse && printf x | dd of=sparse bs=1 seek=536870912 conv=notrunc status=none && stat -c "%s" sparse'
    'printf y | dd of=big bs=1 seek=1000 conv=notrunc status=none'
    'printf z | dd of=sparse bs=1 seek=10 conv=notrunc status=none'
  )
}

ALL=(git npm cargo python files replaced_tree hardlink_write hardlink_sed dir_rename root_mode big)

# ---------------------------------------------------------------------------------------------------

json_command() { "$PY" -c 'import json, sys; print(json.dumps({"command": sys.argv[1], "timeout_ms": 300000}))' "$1"; }

# Fresh $P and $HM, the workload's setup run in $P, every mtime set to the epoch.
fresh() {
  rm -rf "$P" "$HM" "$W/tmp"
  mkdir -p "$P" "$HM" "$W/tmp"
  (cd "$P" && HOME=$HM GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null "setup_$1") >"$W/setup.log" 2>&1 ||
    { echo "setup of $1 failed:"; cat "$W/setup.log"; return 1; }
  find "$P" "$HM" -exec touch -h -d "@$EPOCH" {} +
}

# Portcullis's text without its own lines: what the command printed, as the direct run's is shaped.
strip_portcullis() { grep -v -E '^\[(changes kept: |change discarded: |[0-9]+ more changes discarded\]|exit code: |sandbox)' || true; }

run_workload() {
  local name=$1 started=$SECONDS i rc out line problems=() notes=()
  "steps_$name"
  local n=${#STEPS[@]}
  # (a) directly.
  fresh "$name" || return 1
  for i in "${!STEPS[@]}"; do
    (cd "$P" && env -i HOME="$HM" PATH="$STEP_PATH" TERM=dumb SHELL=/bin/bash LANG=C.UTF-8 TMPDIR="$W/tmp" \
      /bin/bash -c "$PREFIX${STEPS[$i]}") \
      </dev/null >"$W/a.$i.out" 2>"$W/a.$i.err"
    echo $? >"$W/a.$i.rc"
    if [ -s "$W/a.$i.err" ]; then { echo "[stderr]"; cat "$W/a.$i.err"; } >>"$W/a.$i.out"; fi
  done
  rm -rf "$W/A" && mkdir -p "$W/A" && mv "$P" "$W/A/proj" && mv "$HM" "$W/A/home"
  # (b) each step through `portcullis call`, after checking it is allowed and confined.
  fresh "$name" || return 1
  for i in "${!STEPS[@]}"; do
    local cmd=$PREFIX${STEPS[$i]}
    out=$(cd "$P" && env -i HOME="$HM" PORTCULLIS_CONFIG_DIR="$PCH/config" PATH="$STEP_PATH" \
      "$PORTCULLIS" policy check --policy "$W/policy.json" -- "$cmd" 2>&1)
    if ! grep -q '^decision: allow' <<<"$out" || ! grep -q '^sandbox: confined by the kernel' <<<"$out"; then
      problems+=("step $((i + 1)) is not allowed and confined: $(grep -E '^(decision|sandbox):' <<<"$out" | tr '\n' ' ')")
    fi
    (cd "$P" && env -i HOME="$HM" PORTCULLIS_CONFIG_DIR="$PCH/config" PATH="$STEP_PATH" \
      "$PORTCULLIS" call --policy "$W/policy.json" --db "$PCH/ledger.db" --approver deny \
      shell "$(json_command "$cmd")") </dev/null >"$W/b.$i.raw" 2>&1
    rc=$(grep -E '^\[exit code: -?[0-9]+\]$' "$W/b.$i.raw" | tail -1 | tr -dc '0-9-')
    if [ -z "$rc" ]; then
      problems+=("step $((i + 1)) did not run confined: $(tail -3 "$W/b.$i.raw" | tr '\n' ' ')")
    elif [ "$rc" != "$(cat "$W/a.$i.rc")" ]; then
      problems+=("step $((i + 1)) exit code $(cat "$W/a.$i.rc") directly, $rc through portcullis: $(strip_portcullis <"$W/b.$i.raw" | tail -2 | tr '\n' ' ')")
    fi
    while IFS= read -r line; do notes+=("step $((i + 1)): $line"); done < <(grep -E '^\[(change discarded|[0-9]+ more changes discarded|sandbox)' "$W/b.$i.raw")
    strip_portcullis <"$W/b.$i.raw" >"$W/b.$i.out"
    if ! cmp -s "$W/a.$i.out" "$W/b.$i.out"; then
      notes+=("step $((i + 1)) printed differently: $(diff "$W/a.$i.out" "$W/b.$i.out" | grep '^[<>]' | head -4 | tr '\n' ' ')")
    fi
  done
  rm -rf "$W/B" && mkdir -p "$W/B" && mv "$P" "$W/B/proj" && mv "$HM" "$W/B/home"
  # The trees, at the same path (each moved back to $P in turn: a digest names paths relative to it).
  local side
  for side in A B; do
    mv "$W/$side/proj" "$P"
    "${DIGEST[@]}" digest "$P" --exclude .portcullis >"$W/$side.digest"
    if declare -F "post_$name" >/dev/null; then
      (cd "$P" && HOME="$W/$side/home" GIT_CONFIG_NOSYSTEM=1 "post_$name") >"$W/$side.post" 2>&1
    fi
    mv "$P" "$W/$side/proj"
  done
  local compared
  compared=$("${DIGEST[@]}" compare "$W/A.digest" "$W/B.digest" -n "$SHOW")
  local tree_rc=$?
  if [ -f "$W/A.post" ] && ! cmp -s "$W/A.post" "$W/B.post"; then
    notes+=("post-check printed differently: $(diff "$W/A.post" "$W/B.post" | grep '^[<>]' | head -6 | tr '\n' ' ')")
  fi
  local took=$((SECONDS - started)) paths
  paths=$(wc -l <"$W/A.digest")
  if [ "$tree_rc" = 0 ] && [ ${#problems[@]} = 0 ]; then
    printf 'ok         %-15s %d steps, %d paths, %ds\n' "$name" "$n" "$paths" "$took"
  else
    printf 'DIFFERENT  %-15s %d steps, %d paths, %ds\n' "$name" "$n" "$paths" "$took"
    local p
    for p in "${problems[@]}"; do echo "    $p"; done
    [ "$tree_rc" = 0 ] || echo "    trees differ (path: what, A = direct -> B = portcullis):"
  fi
  grep -v '^    note' <<<"$compared" | grep . || true
  grep '^    note' <<<"$compared" || true
  local m
  for m in "${notes[@]}"; do echo "    note: ${m:0:400}"; done
  [ "${FAITHFUL_KEEP:-}" = 1 ] && mkdir -p "$W/kept/$name" && mv "$W/A" "$W/B" "$W"/a.* "$W"/b.* "$W"/*.digest "$W/kept/$name/"
  rm -rf "$W/A" "$W/B" "$W"/a.* "$W"/b.* "$W"/*.post
  [ "$tree_rc" = 0 ] && [ ${#problems[@]} = 0 ]
}

want=("$@")
[ ${#want[@]} -gt 0 ] || want=("${ALL[@]}")
failed=0
start=$SECONDS
echo "faithful: $PORTCULLIS ($("$PORTCULLIS" --version 2>/dev/null)), scratch $W"
for w in "${want[@]}"; do
  if ! declare -F "steps_$w" >/dev/null; then echo "unknown workload: $w (known: ${ALL[*]})"; failed=1; continue; fi
  run_workload "$w" || failed=1
done
echo "faithful: $((SECONDS - start))s, $([ $failed = 0 ] && echo 'all ok' || echo 'some DIFFERENT')"
exit $failed
