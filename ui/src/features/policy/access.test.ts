// Grant scopes and path rules edited through the text: each edit changes exactly what it names.
import { describe, expect, it } from "vitest";
import { addDenyGlob, addRoot, addScope, cellOf, readGrants, readPaths, removeRoot, setCell, setRootAccess } from "./access";
import { applyEdits } from "./model";

const TEXT = `{
  "grants": [
    { "name": "agents", "deny": ["mcp:github:delete_repo"] }
  ],
  "commands": { "default": "prompt" }
}
`;

describe("grant cells", () => {
  it("cycles a tool through allow, deny and neither in one scope, one undo step each", () => {
    const [scope] = readGrants(TEXT) ?? [];
    if (!scope) throw new Error("no scope");
    expect(cellOf(scope, "shell")).toBe("none");
    const edits = setCell(TEXT, 0, scope, "shell", "allow");
    expect(edits).toHaveLength(1);
    const allowed = applyEdits(TEXT, edits);
    expect(readGrants(allowed)).toEqual([{ name: "agents", allow: ["shell"], deny: ["mcp:github:delete_repo"] }]);
    const [again] = readGrants(allowed) ?? [];
    const denied = applyEdits(allowed, setCell(allowed, 0, again!, "shell", "deny"));
    expect(readGrants(denied)).toEqual([{ name: "agents", allow: [], deny: ["mcp:github:delete_repo", "shell"] }]);
    expect(JSON.parse(denied).grants[0].allow).toBeUndefined();
    const [third] = readGrants(denied) ?? [];
    const neither = applyEdits(denied, setCell(denied, 0, third!, "mcp:github:delete_repo", "none"));
    expect(JSON.parse(neither).grants[0]).toEqual({ name: "agents", deny: ["shell"] });
    expect(neither).toContain(`"commands": { "default": "prompt" }`);
  });
  it("adds a scope", () => {
    const text = applyEdits(TEXT, addScope(TEXT, "ci"));
    expect(readGrants(text)?.map((s) => s.name)).toEqual(["agents", "ci"]);
    expect(readGrants("{ nope")).toBeNull();
  });
});

describe("path rules", () => {
  it("reads the defaults, adds and changes roots and deny globs", () => {
    expect(readPaths(TEXT)).toEqual({ roots: [], deny: [], default_deny: true, read_outside_roots: "prompt" });
    let text = applyEdits(TEXT, addRoot(TEXT, { path: "~/src/lib", access: "read" }));
    text = applyEdits(text, addRoot(text, { path: ".", access: "write" }));
    text = applyEdits(text, setRootAccess(text, 0, "write"));
    text = applyEdits(text, addDenyGlob(text, "*.sqlite"));
    expect(readPaths(text)).toEqual({
      roots: [{ path: "~/src/lib", access: "write" }, { path: ".", access: "write" }],
      deny: ["*.sqlite"],
      default_deny: true,
      read_outside_roots: "prompt",
    });
    text = applyEdits(text, removeRoot(text, 0));
    expect(readPaths(text)?.roots).toEqual([{ path: ".", access: "write" }]);
  });
});
