#!/usr/bin/env python3
"""Tree digests for the Faithful suite (python3 standard library only).

  tree_digest.py digest ROOT [--exclude REL]...   one line per path under ROOT (ROOT itself is ".")
  tree_digest.py compare A.digest B.digest [-n N] print the first N differing paths; exit 1 if any

Each line: path, then the fields compared:
  type     d (folder), f (file), l (symlink), p/s/c/b (FIFO, socket, devices)
  mode     permission bits with setuid/setgid/sticky (st_mode & 0o7777); never for a symlink
  owner    uid:gid
  content  sha256 of a file's bytes; a symlink's target text; a device's major:minor
  links    for a file with more than one link: its hard-link group inside the tree (the first path of
           the group in walk order) and the link count; a link that goes out of the tree shows as a
           count above the group's size
  xattrs   every extended attribute (name and sha256 of its value), in name order
and, after a "|", fields shown when paths differ but never compared (they depend on the file system's
allocation, not on what a program can read): a file's blocks (st_blocks: a sparse file made dense).

Nothing is skipped unless named with --exclude (a path relative to ROOT: that path and all it holds).
Timestamps are never part of a line (see run.sh for why). One normalisation, for git's index file
(any path ending in ".git/index"): its per-entry stat cache (ctime, mtime, dev, ino, uid, gid, size) is
zeroed before hashing and the trailing checksum recomputed — that cache describes the worktree files'
inodes and times (always different between two trees; git smudges the size of "racily clean" entries);
every other byte (the entries' modes, object ids, flags, paths, and all extensions) is hashed as is.
Another, for cargo's `.rustc_info.json` (in a target folder): hashed as JSON with its keys sorted —
cargo writes a Rust HashMap, whose order changes from one cargo process to the next (seen here: two
byte orders of the same object between runs of the same build).
"""

import hashlib
import json
import os
import stat
import sys


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            block = f.read(1 << 20)
            if not block:
                break
            h.update(block)
    return h.hexdigest()


def git_index_normalised(path):
    """The index with its stat cache zeroed (versions 2 and 3; anything else is hashed as is)."""
    data = open(path, "rb").read()
    if len(data) < 32 or data[:4] != b"DIRC":
        return hashlib.sha256(data).hexdigest()
    version = int.from_bytes(data[4:8], "big")
    count = int.from_bytes(data[8:12], "big")
    if version not in (2, 3):
        return "v%d:" % version + hashlib.sha256(data).hexdigest()
    out = bytearray(data[:12])
    at = 12
    for _ in range(count):
        entry_start = at
        # ctime(8) mtime(8) dev ino mode uid gid size (4 each) oid(20) flags(2) [flags2(2)] path NUL pad
        flags = int.from_bytes(data[at + 60:at + 62], "big")
        header = 62
        if version == 3 and flags & 0x4000:
            header += 2
        name_end = data.index(b"\0", at + header)
        entry_len = ((name_end - entry_start) // 8 + 1) * 8  # padded to a multiple of 8 with NULs
        entry = bytearray(data[entry_start:entry_start + entry_len])
        entry[0:24] = bytes(24)   # ctime, mtime, dev, ino
        entry[28:36] = bytes(8)   # uid, gid
        entry[36:40] = bytes(4)   # size
        out += entry
        at = entry_start + entry_len
    out += data[at:-20]           # extensions (TREE, REUC, ...), as they are
    return "git-index-v%d-normalised:" % version + hashlib.sha256(bytes(out)).hexdigest()


def json_canonical(path):
    """A JSON file hashed with its object keys sorted (the bytes as they are if it is not JSON)."""
    data = open(path, "rb").read()
    try:
        value = json.loads(data)
    except ValueError:
        return hashlib.sha256(data).hexdigest()
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return "json-keys-sorted:" + hashlib.sha256(text.encode()).hexdigest()


def xattrs(path):
    try:
        names = os.listxattr(path, follow_symlinks=False)
    except OSError:
        return ""
    parts = []
    for name in sorted(names):
        try:
            value = os.getxattr(path, name, follow_symlinks=False)
        except OSError as e:
            value = ("unreadable:%s" % e.errno).encode()
        parts.append("%s=%s" % (name, hashlib.sha256(value).hexdigest()[:16]))
    return ",".join(parts)


def esc(text):
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace") \
        .replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")


def digest(root, excludes):
    excludes = {os.path.normpath(e) for e in excludes}
    entries = []          # (rel, stat)
    pending = ["."]
    while pending:
        rel = pending.pop()
        if rel != "." and os.path.normpath(rel) in excludes:
            continue
        full = os.path.join(root, rel)
        st = os.lstat(full)
        entries.append((rel, st))
        if stat.S_ISDIR(st.st_mode):
            names = sorted(os.listdir(full), key=lambda n: n.encode("utf-8", "surrogateescape"))
            pending.extend(os.path.join(rel, n) if rel != "." else n for n in reversed(names))
    groups = {}
    for rel, st in entries:
        if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
            groups.setdefault((st.st_dev, st.st_ino), []).append(rel)
    lines = []
    for rel, st in entries:
        full = os.path.join(root, rel)
        m = st.st_mode
        links = ""
        if stat.S_ISDIR(m):
            kind, content = "d", ""
        elif stat.S_ISREG(m):
            kind = "f"
            if rel == ".git/index" or rel.endswith("/.git/index"):
                content = git_index_normalised(full)
            elif os.path.basename(rel) == ".rustc_info.json":
                content = json_canonical(full)
            else:
                content = sha256_file(full)
            group = groups.get((st.st_dev, st.st_ino))
            if group:
                links = "group=%s,nlink=%d,in-tree=%d" % (esc(group[0]), st.st_nlink, len(group))
        elif stat.S_ISLNK(m):
            kind, content = "l", esc(os.readlink(full))
        else:
            kind = {stat.S_IFIFO: "p", stat.S_IFSOCK: "s", stat.S_IFCHR: "c", stat.S_IFBLK: "b"}.get(
                stat.S_IFMT(m), "?")
            content = "%d:%d" % (os.major(st.st_rdev), os.minor(st.st_rdev)) if kind in "cb" else ""
        mode = "" if kind == "l" else "%04o" % (m & 0o7777)
        fields = [esc(rel), kind, mode, "%d:%d" % (st.st_uid, st.st_gid), content, links,
                  xattrs(full) if kind != "l" else ""]
        info = "blocks=%d" % st.st_blocks if kind == "f" else ""
        lines.append("\t".join(fields) + "\t|\t" + info)
    return lines


def parse(path):
    out = {}
    order = []
    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        compared, _, info = line.partition("\t|\t")
        key = compared.split("\t", 1)[0]
        out[key] = (compared, info)
        order.append(key)
    return out, order


def compare(a_path, b_path, shown):
    a, a_order = parse(a_path)
    b, b_order = parse(b_path)
    names = ["type", "mode", "owner", "content", "links", "xattrs"]
    diffs = []
    for key in a_order + [k for k in b_order if k not in a]:
        if key not in b:
            diffs.append("%s: only in A (direct)" % key)
        elif key not in a:
            diffs.append("%s: only in B (portcullis)" % key)
        elif a[key][0] != b[key][0]:
            fa, fb = a[key][0].split("\t")[1:], b[key][0].split("\t")[1:]
            what = ["%s %s -> %s" % (n, x or "-", y or "-") for n, x, y in zip(names, fa, fb) if x != y]
            info = "" if a[key][1] == b[key][1] else " (%s -> %s)" % (a[key][1], b[key][1])
            diffs.append("%s: %s%s" % (key, "; ".join(what), info))
    notes = [
        "%s: %s -> %s" % (k, a[k][1], b[k][1]) for k in a_order if k in b and a[k][0] == b[k][0] and a[k][1] != b[k][1]
    ]
    for d in diffs[:shown]:
        print("    " + d)
    if len(diffs) > shown:
        print("    ... and %d more differing paths" % (len(diffs) - shown))
    for n in notes[:shown]:
        print("    note (same content, allocation differs): " + n)
    if len(notes) > shown:
        print("    note: ... and %d more" % (len(notes) - shown))
    return 1 if diffs else 0


def main(argv):
    if len(argv) >= 2 and argv[0] == "digest":
        root, rest, excludes = argv[1], argv[2:], []
        while rest:
            if rest[0] == "--exclude" and len(rest) > 1:
                excludes.append(rest[1])
                rest = rest[2:]
            else:
                sys.exit("unknown argument: %s" % rest[0])
        sys.stdout.write("".join(l + "\n" for l in digest(root, excludes)))
        return 0
    if len(argv) >= 3 and argv[0] == "compare":
        shown = int(argv[4]) if len(argv) >= 5 and argv[3] == "-n" else 8
        return compare(argv[1], argv[2], shown)
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
