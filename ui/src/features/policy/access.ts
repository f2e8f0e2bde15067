// The draft's grant scopes and path rules, read from the text and edited as the smallest text edits (as
// model.ts does for rules): a tool's cell in a scope (allow, deny or neither), a scope added, a root
// added, changed or removed, a deny glob added or removed.
import { type Edit, type ParseError, modify, parse } from "jsonc-parser";
import { addToList, inSequence, quietEdit } from "./model";

export interface GrantScope {
  name: string;
  allow: string[];
  deny: string[];
}

export type Cell = "allow" | "deny" | "none";

export interface PathRoot {
  path: string;
  access: "read" | "write";
}

export interface PathRules {
  roots: PathRoot[];
  deny: string[];
  default_deny: boolean;
  read_outside_roots: string;
}

function doc(text: string): Record<string, unknown> | null {
  const errors: ParseError[] = [];
  const value: unknown = parse(text, errors, { disallowComments: true });
  return errors.length === 0 && typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
}

const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : []);

/** The draft's grant scopes (null: the text does not parse). */
export function readGrants(text: string): GrantScope[] | null {
  const d = doc(text);
  if (!d) return null;
  const grants = Array.isArray(d["grants"]) ? d["grants"] : [];
  return grants.map((g: Record<string, unknown>) => ({ name: String(g?.["name"] ?? ""), allow: strings(g?.["allow"]), deny: strings(g?.["deny"]) }));
}

export function cellOf(scope: GrantScope, tool: string): Cell {
  return scope.deny.includes(tool) ? "deny" : scope.allow.includes(tool) ? "allow" : "none";
}

/** The edits that put `tool` in scope `index`'s allow list, deny list, or neither. */
export function setCell(text: string, index: number, scope: GrantScope, tool: string, cell: Cell): Edit[] {
  const allow = scope.allow.filter((t) => t !== tool);
  const deny = scope.deny.filter((t) => t !== tool);
  if (cell === "allow") allow.push(tool);
  if (cell === "deny") deny.push(tool);
  return inSequence(text, [
    (t) => quietEdit(t, ["grants", index, "allow"], allow.length ? allow : undefined),
    (t) => quietEdit(t, ["grants", index, "deny"], deny.length ? deny : undefined),
  ]);
}

/** The edits that add a scope named `name` (creating `grants` when missing). */
export function addScope(text: string, name: string): Edit[] {
  return addToList(text, ["grants"], { name, deny: [] });
}

/** The draft's path rules, with the defaults the policy applies when a field is missing. */
export function readPaths(text: string): PathRules | null {
  const d = doc(text);
  if (!d) return null;
  const p = (typeof d["paths"] === "object" && d["paths"] !== null ? d["paths"] : {}) as Record<string, unknown>;
  const roots = Array.isArray(p["roots"]) ? p["roots"] : [];
  return {
    roots: roots.map((r: Record<string, unknown>) => ({ path: String(r?.["path"] ?? ""), access: r?.["access"] === "write" ? "write" : "read" })),
    deny: strings(p["deny"]),
    default_deny: p["default_deny"] !== false,
    read_outside_roots: typeof p["read_outside_roots"] === "string" ? p["read_outside_roots"] : "prompt",
  };
}

export function addRoot(text: string, root: PathRoot): Edit[] {
  return addToList(text, ["paths", "roots"], root);
}

export function setRootAccess(text: string, index: number, access: PathRoot["access"]): Edit[] {
  return quietEdit(text, ["paths", "roots", index, "access"], access);
}

export function removeRoot(text: string, index: number): Edit[] {
  return modify(text, ["paths", "roots", index], undefined, {});
}

export function addDenyGlob(text: string, glob: string): Edit[] {
  return addToList(text, ["paths", "deny"], glob);
}

export function removeDenyGlob(text: string, index: number): Edit[] {
  return modify(text, ["paths", "deny", index], undefined, {});
}
