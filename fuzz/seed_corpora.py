#!/usr/bin/env python3
"""Seed inputs for the fuzz targets, taken from the repository's own examples (why it exists: the first
run of each target starts from real commands, policies, schemas, MCP messages and hook inputs).

Usage: python3 fuzz/seed_corpora.py OUT_DIR   (writes OUT_DIR/<target>/seed-NNNN; run from the repo root)
The committed corpora (fuzz/corpus/<target>/) were made from these seeds, fuzzed and minimized
(`cargo fuzz cmin`); scripts/fuzz.sh starts from the committed corpora.
"""

import glob
import json
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROJECT = "/portcullis-fuzz/project"


def load(path):
    with open(os.path.join(REPO, path), encoding="utf-8") as f:
        return json.load(f)


def text(path):
    with open(os.path.join(REPO, path), encoding="utf-8") as f:
        return f.read()


def policies():
    return ["tool-manifests/policies/default.json"] + sorted(glob.glob("tests/policy-corpus/*/policy.json", root_dir=REPO))


def shell_seeds():
    seeds = []
    for cases in sorted(glob.glob("tests/policy-corpus/*/cases.json", root_dir=REPO)):
        seeds += [c["shell"] for c in load(cases) if "shell" in c]
    for path in policies():
        doc = load(path)
        for rule in doc.get("commands", {}).get("rules", []):
            seeds += rule.get("examples", []) + rule.get("not_match", [])
        for case in doc.get("tests", []):
            command = case.get("call", {}).get("arguments", {}).get("command")
            if isinstance(command, str):
                seeds.append(command)
    return seeds


def policy_seeds():
    seeds = [text(p) for p in policies()]
    seeds.append(json.dumps({
        "servers": [
            {"id": "docs", "command": "node", "args": ["server.js"], "cwd": "tools", "decision": "prompt",
             "tools": {"search": "allow", "delete": "forbidden"}},
            {"id": "remote.api", "url": "https://example.com/mcp", "decision": "forbidden"},
        ],
        "paths": {"roots": [{"path": ".", "access": "write"}, {"path": "~/notes", "access": "read"}],
                  "deny": ["**/.env", "secrets/**"], "read_outside_roots": "forbidden", "default_deny": True},
        "commands": {"default": "prompt", "rules": [
            {"id": "git-read", "pattern": ["git", ["status", "log", "diff"]], "decision": "allow",
             "examples": ["git status"], "not_match": ["git push"]},
            {"id": "rm", "pattern": ["rm", "*"], "exact": False, "decision": "forbidden",
             "justification": "no deletions", "examples": ["rm -rf x"]},
        ]},
        "approvals": {"timeout_seconds": 30, "on_timeout": "forbidden"},
        "images": {"max_bytes": 1000000, "max_dimension": 2000},
        "grants": [{"name": "coding", "allow": ["shell", "read"], "deny": ["write"]}],
        "tests": [{"name": "status", "call": {"name": "shell", "arguments": {"command": "git status"}},
                   "expect": "allow", "cwd": "sub"}],
    }, indent=1))
    return seeds


def schema_seeds():
    seeds = []
    policy_schema = text("tool-manifests/schemas/policy.schema.json")
    for path in policies():
        seeds.append(policy_schema + "\n" + text(path))
    manifest_schema = text("tool-manifests/schemas/tool-manifest.schema.json")
    for path in sorted(glob.glob("tool-manifests/examples/*.json", root_dir=REPO)):
        seeds.append(manifest_schema + "\n" + text(path))
        seeds.append(json.dumps(load(path).get("parameters", {})) + "\n{}")
    pairs = [
        ({"type": "object", "properties": {"command": {"type": "string", "minLength": 1, "maxLength": 100}},
          "required": ["command"], "additionalProperties": False}, {"command": "ls"}),
        ({"type": "object", "properties": {"path": {"type": "string", "pattern": "^[a-z/]+$"}}}, {"path": "A"}),
        ({"$defs": {"n": {"type": "integer", "minimum": 0, "multipleOf": 3}},
          "type": "object", "properties": {"a": {"$ref": "#/$defs/n"}}}, {"a": 7}),
        ({"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "number"}, "maxItems": 2}]}, [1, 2, 3]),
        ({"oneOf": [{"const": 1}, {"enum": [1, 2]}]}, 1),
        ({"allOf": [{"minProperties": 1}, {"not": {"required": ["x"]}}]}, {"x": None}),
        ({"if": {"properties": {"k": {"const": "a"}}}, "then": {"required": ["a"]}, "else": {"required": ["b"]}},
         {"k": "a"}),
        ({"type": "array", "prefixItems": [{"type": "string"}], "contains": {"type": "null"}, "uniqueItems": True},
         ["a", None, None]),
        ({"type": "object", "patternProperties": {"^x-": {"type": "boolean"}}, "propertyNames": {"maxLength": 5},
          "dependentRequired": {"a": ["b"]}, "unevaluatedProperties": False}, {"x-1": True, "a": 1}),
        ({"type": "string", "format": "email"}, "not an email"),
        ({"$ref": "#"}, {}),
        ({"properties": {"__proto__": {"type": "object"}}}, {"constructor": {"prototype": {}}}),
        (True, {"deep": [[[[{"a": "b"}]]]]}),
        (False, {}),
        ({"type": "object", "$ref": "https://example.com/remote.json"}, {}),
    ]
    seeds += [json.dumps(schema) + "\n" + json.dumps(instance) for schema, instance in pairs]
    return seeds


def mcp_seeds():
    listed = [
        {"name": n, "description": f"{n} on purpose", "inputSchema": {"type": "object", "properties": {}},
         "annotations": {"readOnlyHint": n == "ok", "destructiveHint": n == "crash"}}
        for n in ["ok", "crash", "hang", "big", "garbage"]
    ]
    listed.append({"name": "get-sum", "title": "Sum", "inputSchema": {"type": "object", "properties": {
        "a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]},
        "annotations": {"idempotentHint": True, "openWorldHint": False}})
    listed.append({"name": "bad name:with:colons", "inputSchema": {"type": "object"}})
    results = [
        {"content": [{"type": "text", "text": "fine"}]},
        {"content": [{"type": "text", "text": "unknown"}], "isError": True},
        {"content": [{"type": "image", "data": "aGk=", "mimeType": "image/png"},
                     {"type": "audio", "data": "aGk=", "mimeType": "audio/wav"},
                     {"type": "resource", "resource": {"uri": "file:///a", "mimeType": "text/plain", "text": "a"}},
                     {"type": "resource", "resource": {"uri": "file:///b", "blob": "aGk="}},
                     {"type": "resource_link", "uri": "file:///c", "name": "c"}],
         "structuredContent": {"sum": 3}},
    ]
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "claude-code", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"cursor": "100"}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "ev__echo", "arguments": {"message": "hi"},
                                                                        "_meta": {"progressToken": 7}}},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": 42}},
        {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "shell", "arguments": [1]}},
        {"jsonrpc": "2.0", "id": 6, "method": "resources/read", "params": {"uri": 5}},
        {"jsonrpc": "2.0", "id": "a", "result": {"tools": listed, "nextCursor": "2"}},
        {"jsonrpc": "2.0", "id": 7, "error": {"code": -32601, "message": "nope"}},
        {"jsonrpc": "1.0", "id": 8, "method": "ping"},
        [{"jsonrpc": "2.0", "id": 9, "method": "ping"}],
        {"tools": listed},
        {"call_id": "c1", "tool_name": "shell", "status": "finished",
         "output": {"content": [{"type": "text", "text": "ok"}], "is_error": False},
         "decided_by": {"by": "rule", "rule_id": "git-read", "source": "policy.json"}, "redacted": False},
        {"call_id": "c2", "tool_name": "shell", "status": "blocked", "reason": "execution_denied",
         "error": {"code": "execution_denied", "message": "no."},
         "decided_by": {"by": "operator", "outcome": "denied", "operator": "ann"}, "redacted": True},
        {"call_id": "c3", "tool_name": "mcp:ev:echo", "status": "error",
         "error": {"code": "upstream_timeout", "message": "slow"},
         "decided_by": {"by": "approval_timeout", "after_ms": 120000}, "redacted": False},
    ]
    seeds = [json.dumps(m) for m in messages]
    seeds += [json.dumps({"jsonrpc": "2.0", "id": i, "result": r}) for i, r in enumerate(results)]
    return seeds


def hook_seeds():
    def hook(tool, tool_input, cwd=PROJECT, event="PreToolUse"):
        return json.dumps({"session_id": "claude-session-1", "transcript_path": "/tmp/transcript.jsonl",
                           "cwd": cwd, "permission_mode": "default", "hook_event_name": event,
                           "tool_name": tool, "tool_input": tool_input})

    seeds = [
        hook("Bash", {"command": "git status && ls", "description": "status"}),
        hook("Bash", {"command": "ls; rm -rf ~"}),
        hook("Bash", {"command": "make deploy"}),
        hook("Write", {"file_path": "/portcullis-fuzz/outside.txt", "content": "x"}),
        hook("Edit", {"file_path": PROJECT + "/src/new.rs", "old_string": "a", "new_string": "b"}),
        hook("MultiEdit", {"file_path": "src/lib.rs", "edits": []}),
        hook("NotebookEdit", {"notebook_path": "~/n.ipynb"}),
        hook("Read", {"file_path": PROJECT + "/.env"}),
        hook("Grep", {"pattern": "x"}),
        hook("Glob", {"pattern": "*.rs", "path": "../.."}),
        hook("LS", {"path": "~root"}),
        hook("mcp__docs__search", {"q": "x"}),
        hook("mcp__other__tool", {}),
        hook("WebFetch", {"url": "https://example.com", "prompt": "x"}),
        hook("WebSearch", {"query": "x"}),
        hook("TodoWrite", {"todos": []}),
        hook("Bash", {"command": "ls"}, event="PostToolUse"),
        '{"cwd": "/tmp", "hook_event_name": "PreToolUse"}',
        '{"tool_name": "Bash", "cwd": "relative", "tool_input": {"command": "ls"}}',
        '{"tool_name": "Bash", "cwd": "/tmp", "tool_input": {}}',
        '{"tool_name": "Bash", "cwd": "/tmp", "tool_input": []}',
        "not json",
    ]
    return seeds


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    targets = {
        "shell_analyzer": shell_seeds(),
        "policy_document": policy_seeds(),
        "schema_arguments": schema_seeds(),
        "mcp_mapping": mcp_seeds(),
        "claude_hook": hook_seeds(),
    }
    for target, seeds in targets.items():
        folder = os.path.join(out, target)
        os.makedirs(folder, exist_ok=True)
        for i, seed in enumerate(dict.fromkeys(seeds)):
            with open(os.path.join(folder, f"seed-{i:04}"), "w", encoding="utf-8") as f:
                f.write(seed)
        print(f"{target}: {len(dict.fromkeys(seeds))} seeds")


if __name__ == "__main__":
    main()
