// The UI keeps no hand-made copy of a Rust type: every type the backend sends is generated into
// `bindings.ts`, and no other module declares an interface or type of the same name (the live view
// once kept its own `CallRow`). A view that needs more composes the generated type (`{ listed: CallRow }`).
import { readFileSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const SRC = join(__dirname, "..");

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return /\.tsx?$/.test(name) ? [path] : [];
  });
}

/** The names a module declares as `interface X` or `type X =`. */
export function declared(text: string): string[] {
  const found = text.matchAll(/^[ \t]*(?:export\s+)?(?:interface\s+([A-Z]\w*)\b|type\s+([A-Z]\w*)\s*(?:<[^=]*>)?\s*=)/gm);
  return [...found].map((m) => (m[1] ?? m[2])!);
}

describe("generated types only", () => {
  it("finds the declarations it looks for", () => {
    expect(declared("export interface CallRow {\n}\ntype Local = string;\nimport {\n  type FeedItem,\n} from 'x';")).toEqual(["CallRow", "Local"]);
  });

  it("no module declares a type the bindings generate", () => {
    const generated = new Set(declared(readFileSync(join(SRC, "backend/bindings.ts"), "utf8")));
    expect(generated.size).toBeGreaterThan(100);
    expect(generated.has("CallRow")).toBe(true);
    const mirrors = sources(SRC)
      .filter((f) => !f.endsWith("bindings.ts"))
      .flatMap((f) => declared(readFileSync(f, "utf8")).filter((n) => generated.has(n)).map((n) => `${f.slice(SRC.length + 1)}: ${n}`));
    expect(mirrors).toEqual([]);
  });
});
