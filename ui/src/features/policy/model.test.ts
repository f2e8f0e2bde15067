// The structured editor's model against every real policy the repository holds: rules read from the text
// and written back through edits give the same document (structured -> source -> structured), and an
// edit changes only what it names.
import { readFileSync, readdirSync, existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { modify } from "jsonc-parser";
import { addRule, addTest, applyEdits, elementOf, elementText, freshId, mergeAddedRules, readRules, removeRule, setRuleField } from "./model";

const ROOT = join(__dirname, "../../../..");

/** Every policy file of tests/policy-corpus and the shipped policies. */
function policies(): [string, string][] {
  const corpus = join(ROOT, "tests/policy-corpus");
  const shipped = join(ROOT, "tool-manifests/policies");
  const files = [
    ...readdirSync(corpus).map((d) => join(corpus, d, "policy.json")).filter((f) => existsSync(f)),
    ...readdirSync(shipped).filter((f) => f.endsWith(".json")).map((f) => join(shipped, f)),
  ];
  return files.map((f) => [f.slice(ROOT.length + 1), readFileSync(f, "utf8")]);
}

describe("structured <-> source round trip", () => {
  const all = policies();
  it("covers the corpus", () => {
    expect(all.length).toBeGreaterThanOrEqual(8);
  });
  it.each(all)("%s: rules written back one by one give the same document", (_name, text) => {
    const read = readRules(text);
    if (!read.ok) throw new Error(read.error);
    expect(read.rules.length).toBeGreaterThan(0);
    let rebuilt = applyEdits(text, modify(text, ["commands", "rules"], [], { formattingOptions: { insertSpaces: true, tabSize: 2 } }));
    expect(readRules(rebuilt)).toEqual({ ok: true, rules: [] });
    for (const rule of read.rules) rebuilt = applyEdits(rebuilt, addRule(rebuilt, rule));
    expect(JSON.parse(rebuilt)).toEqual(JSON.parse(text));
    expect(readRules(rebuilt)).toEqual(read);
  });
  it.each(all)("%s: an added rule leaves every other byte of the file as it was", (_name, text) => {
    const edits = addRule(text, { id: "new-rule", pattern: ["make", ["test", "check"]], decision: "allow", match: ["make test"] });
    expect(edits).toHaveLength(1);
    const [edit] = edits;
    expect(edit?.length).toBe(0);
    expect(edit?.content).toMatch(/^,\n\s*\{ "id": "new-rule", "pattern": \["make", \["test", "check"\]\], "decision": "allow", "match": \["make test"\] \}$/);
  });
  it.each(all)("%s: setting a field to its value changes nothing; another value changes only it", (_name, text) => {
    const read = readRules(text);
    if (!read.ok) throw new Error(read.error);
    read.rules.forEach((rule, i) => {
      expect(JSON.parse(applyEdits(text, setRuleField(text, i, "decision", rule.decision)))).toEqual(JSON.parse(text));
      expect(JSON.parse(applyEdits(text, setRuleField(text, i, "pattern", rule.pattern)))).toEqual(JSON.parse(text));
    });
    const other = read.rules[0]?.decision === "allow" ? "forbidden" : "allow";
    const edits = setRuleField(text, 0, "decision", other);
    expect(edits).toEqual([expect.objectContaining({ content: JSON.stringify(other) })]);
    const changed = applyEdits(text, edits);
    const expected = JSON.parse(text);
    expected.commands.rules[0].decision = other;
    expect(JSON.parse(changed)).toEqual(expected);
  });
});

describe("edits", () => {
  const TEXT = `{\n  "commands": {\n    "default": "prompt"\n  }\n}\n`;
  it("adds a rule where there were none, keeping the rest of the text", () => {
    const added = applyEdits(TEXT, addRule(TEXT, { id: "git-read", pattern: ["git", ["status", "log"]], decision: "allow", match: ["git status"] }));
    expect(added).toContain(`"default": "prompt"`);
    expect(readRules(added)).toEqual({ ok: true, rules: [{ id: "git-read", pattern: ["git", ["status", "log"]], decision: "allow", match: ["git status"] }] });
    const removed = applyEdits(added, removeRule(added, 0));
    expect(readRules(removed)).toEqual({ ok: true, rules: [] });
  });
  it("removes optional fields set to nothing", () => {
    const text = applyEdits(TEXT, addRule(TEXT, { id: "a", pattern: ["ls"], decision: "allow", exact: true, match: ["ls"] }));
    const inexact = applyEdits(text, setRuleField(text, 0, "exact", false));
    const plain = applyEdits(inexact, setRuleField(inexact, 0, "match", []));
    expect(JSON.parse(plain).commands.rules[0]).toEqual({ id: "a", pattern: ["ls"], decision: "allow" });
  });
  it("adds a test case", () => {
    const text = applyEdits(TEXT, addTest(TEXT, { name: "t", call: { name: "shell", arguments: { command: "ls" } }, expect: "allow" }));
    expect(JSON.parse(text).tests).toEqual([{ name: "t", call: { name: "shell", arguments: { command: "ls" } }, expect: "allow" }]);
  });
  it("says why a text cannot be read, and where", () => {
    const read = readRules(`{ "commands": { "rules": [ }`);
    expect(read.ok).toBe(false);
    if (!read.ok) expect(read.offset).toBeGreaterThan(0);
    expect(readRules(`{ "commands": { "rules": 3 } }`)).toMatchObject({ ok: false, error: "commands.rules is not a list" });
    expect(readRules(`[]`)).toMatchObject({ ok: false });
  });
  it("reads pattern words and alternatives as the token editor shows them", () => {
    expect(elementText(["status", "log"])).toBe("status | log");
    expect(elementOf("status | log")).toEqual(["status", "log"]);
    expect(elementOf(" git ")).toBe("git");
    expect(freshId([{ id: "rule-1", pattern: [], decision: "allow" }])).toBe("rule-2");
  });
});

describe("merging what changed on disk", () => {
  const base = `{\n  "commands": {\n    "rules": [\n      { "id": "a", "pattern": ["ls"], "decision": "allow" }\n    ]\n  }\n}\n`;
  const theirs = applyEdits(base, addRule(base, { id: "always-1", pattern: ["git", "status"], decision: "allow", exact: true, match: ["git status"] }));
  it("adds to my draft the rules an always answer wrote, and keeps my edits", () => {
    const mine = applyEdits(base, setRuleField(base, 0, "decision", "forbidden"));
    const { merged, added, rest } = mergeAddedRules(base, mine, theirs);
    expect(added.map((r) => r.id)).toEqual(["always-1"]);
    expect(rest).toBe(false);
    const rules = readRules(merged);
    expect(rules.ok && rules.rules.map((r) => [r.id, r.decision])).toEqual([["a", "forbidden"], ["always-1", "allow"]]);
  });
  it("says when the file changed otherwise too", () => {
    const other = applyEdits(theirs, setRuleField(theirs, 0, "pattern", ["ls", "-l"]));
    expect(mergeAddedRules(base, base, other).rest).toBe(true);
  });
});

describe("a rule's network", () => {
  const text = `{
  "commands": {
    "rules": [
      { "id": "npm", "pattern": ["npm"], "decision": "allow", "network": ["registry.npmjs.org", "*.npmjs.com"] },
      { "id": "curl", "pattern": ["curl"], "decision": "allow", "network": true }
    ]
  }
}`;
  it("reads named hosts and any host", () => {
    const read = readRules(text);
    expect(read.ok && read.rules.map((r) => r.network)).toEqual([["registry.npmjs.org", "*.npmjs.com"], true]);
  });
  it("writes hosts in place and removes an empty list", () => {
    const hosts = applyEdits(text, setRuleField(text, 0, "network", ["github.com:443"]));
    const read = readRules(hosts);
    expect(read.ok && read.rules[0]?.network).toEqual(["github.com:443"]);
    const none = applyEdits(hosts, setRuleField(hosts, 0, "network", undefined));
    expect(none).not.toMatch(/github/);
    const r = readRules(none);
    expect(r.ok && r.rules[0]?.network).toBeUndefined();
  });
});
