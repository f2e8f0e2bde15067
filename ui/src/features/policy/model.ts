// The structured view of a policy text: its command rules (and what else the editors show) read from the
// JSON with a tolerant parser, and every structured edit written back as the smallest text edits
// (jsonc-parser's modify) so the rest of the file keeps its formatting and the source editor can apply
// the edit as one undoable step. The text stays the one truth; this module never holds a copy of it.
import {
  type Edit,
  type FormattingOptions,
  type ParseError,
  createScanner,
  findNodeAtLocation,
  modify,
  parse,
  parseTree,
  printParseErrorCode,
} from "jsonc-parser";
import type { Decision } from "../../backend/backend";

/** What a rule says (the policy's own type, generated). */
export type { Decision };
export const DECISIONS: Decision[] = ["allow", "contain", "prompt", "forbidden"];

/** A pattern element: a word, or alternatives. */
export type PatternElement = string | string[];

/** A command rule as the policy file writes it (unknown fields are kept by editing in place). */
export interface Rule {
  id: string;
  pattern: PatternElement[];
  decision: Decision;
  exact?: boolean;
  /** `true`: any host; a list: the hosts commands may reach (`registry.npmjs.org`, `*.crates.io`, `github.com:443`). */
  network?: boolean | string[];
  /** `prompt`: a host `network` does not name is asked of the operator (else refused). */
  other_hosts?: "refuse" | "prompt";
  justification?: string;
  match?: string[];
  not_match?: string[];
}

/** A test case as the policy file writes it. */
export interface TestCase {
  name?: string;
  call: { name: string; arguments: unknown };
  cwd?: string;
  expect: string;
}

/** What the structured editor reads from a text: its rules, or why it cannot read them. */
export type ReadRules = { ok: true; rules: Rule[] } | { ok: false; error: string; offset: number };

/** Rule fields left out of the file when empty. */
const OPTIONAL = new Set<keyof Rule>(["exact", "network", "other_hosts", "justification", "match", "not_match"]);

const FORMAT: FormattingOptions = { insertSpaces: true, tabSize: 2, eol: "\n" };

/** The text's command rules; a text that is not JSON (or whose rules are not a list) says why and where. */
export function readRules(text: string): ReadRules {
  const errors: ParseError[] = [];
  const doc: unknown = parse(text, errors, { allowTrailingComma: false, disallowComments: true });
  const first = errors[0];
  if (first) return { ok: false, error: printParseErrorCode(first.error), offset: first.offset };
  if (!isObject(doc)) return { ok: false, error: "the policy is not a JSON object", offset: 0 };
  const commands = doc["commands"];
  if (commands === undefined) return { ok: true, rules: [] };
  if (!isObject(commands)) return { ok: false, error: "commands is not an object", offset: 0 };
  const rules = commands["rules"];
  if (rules === undefined) return { ok: true, rules: [] };
  if (!Array.isArray(rules)) return { ok: false, error: "commands.rules is not a list", offset: 0 };
  return { ok: true, rules: rules.map(asRule) };
}

/** The edits that set rule `index`'s `field` to `value` (undefined removes an optional field). */
export function setRuleField<K extends keyof Rule>(text: string, index: number, field: K, value: Rule[K]): Edit[] {
  const empty =
    OPTIONAL.has(field) && (value === undefined || value === false || value === "" || (Array.isArray(value) && value.length === 0));
  return quietEdit(text, ["commands", "rules", index, field], empty ? undefined : value);
}

/** The edits that append `rule` to the rules (creating `commands.rules` when missing). */
export function addRule(text: string, rule: Rule): Edit[] {
  return addToList(text, ["commands", "rules"], clean(rule));
}

/** The edits that remove rule `index`. */
export function removeRule(text: string, index: number): Edit[] {
  return modify(text, ["commands", "rules", index], undefined, {});
}

/** The edits that append a test case (creating `tests` when missing). */
export function addTest(text: string, test: TestCase): Edit[] {
  return addToList(text, ["tests"], test);
}

/**
 * Appends `value` to the list at `path`: on its own line after the last element, indented like it, as
 * one line of JSON (the neighbours are left exactly as they are); into an empty or missing list, the
 * list is written formatted.
 */
export function addToList(text: string, path: (string | number)[], value: unknown): Edit[] {
  const list = findNodeAtLocation(parseTree(text) ?? { type: "null", offset: 0, length: 0 }, path);
  const last = list?.type === "array" ? list.children?.at(-1) : undefined;
  if (!last) return modify(text, [...path, 0], value, { formattingOptions: FORMAT, isArrayInsertion: true });
  const end = last.offset + last.length;
  const lineStart = text.lastIndexOf("\n", last.offset) + 1;
  const indent = /^[ \t]*/.exec(text.slice(lineStart))?.[0] ?? "";
  return [{ offset: end, length: 0, content: `,\n${indent}${oneLine(JSON.stringify(value))}` }];
}

/** jsonc-parser's smallest edit for `path`, its JSON written on one line with the usual spaces. */
export function quietEdit(text: string, path: (string | number)[], value: unknown): Edit[] {
  return modify(text, path, value, {}).map((e) => ({ ...e, content: oneLine(e.content) }));
}

/** A compact JSON fragment re-spaced as people write JSON on one line: `{ "a": [1, 2] }`. */
export function oneLine(fragment: string): string {
  const scanner = createScanner(fragment, false);
  const tokens: string[] = [];
  // Token kinds are compared by their text: jsonc-parser's SyntaxKind is a const enum (not importable here).
  while (scanner.scan() !== EOF) {
    const token = fragment.slice(scanner.getTokenOffset(), scanner.getTokenOffset() + scanner.getTokenLength());
    if (token.trim() !== "") tokens.push(token);
  }
  let out = "";
  tokens.forEach((token, i) => {
    const next = tokens[i + 1];
    out += token;
    if (token === "," || token === ":") out += " ";
    else if (token === "{" && next !== "}") out += " ";
    else if (next === "}" && token !== "{") out += " ";
  });
  return out;
}

/** The scanner's end-of-input kind (SyntaxKind.EOF). */
const EOF = 17;

/** A fresh rule's id: `rule-N`, the first N no rule uses. */
export function freshId(rules: Rule[]): string {
  const used = new Set(rules.map((r) => r.id));
  for (let n = rules.length + 1; ; n++) if (!used.has(`rule-${n}`)) return `rule-${n}`;
}

/** A pattern element as the token editor shows it: alternatives joined by ` | `. */
export function elementText(element: PatternElement): string {
  return Array.isArray(element) ? element.join(" | ") : element;
}

/** What the token editor's text means: `a | b` is alternatives, anything else one word. */
export function elementOf(text: string): PatternElement {
  if (!text.includes("|")) return text.trim();
  return text.split("|").map((t) => t.trim());
}

/** Several edits made one after the other (each computed on the text the previous left) as one minimal
 * replacement of `text`: one undo step, exact offsets. */
export function inSequence(text: string, steps: ((text: string) => Edit[])[]): Edit[] {
  const after = steps.reduce((t, step) => applyEdits(t, step(t)), text);
  let start = 0;
  while (start < text.length && start < after.length && text[start] === after[start]) start++;
  let end = text.length;
  let endAfter = after.length;
  while (end > start && endAfter > start && text[end - 1] === after[endAfter - 1]) {
    end--;
    endAfter--;
  }
  return after === text ? [] : [{ offset: start, length: end - start, content: after.slice(start, endAfter) }];
}

/** Applies jsonc-parser edits to a text (for tests and for texts not in an editor). */
export function applyEdits(text: string, edits: readonly Edit[]): string {
  return [...edits]
    .sort((a, b) => b.offset - a.offset)
    .reduce((t, e) => t.slice(0, e.offset) + e.content + t.slice(e.offset + e.length), text);
}

function clean(rule: Rule): Rule {
  const out: Rule = { id: rule.id, pattern: rule.pattern, decision: rule.decision };
  if (rule.exact) out.exact = true;
  if (rule.network === true || (Array.isArray(rule.network) && rule.network.length > 0)) out.network = rule.network;
  if (rule.other_hosts === "prompt") out.other_hosts = "prompt";
  if (rule.justification) out.justification = rule.justification;
  if (rule.match?.length) out.match = rule.match;
  if (rule.not_match?.length) out.not_match = rule.not_match;
  return out;
}

function asRule(value: unknown): Rule {
  const r = isObject(value) ? value : {};
  const strings = (v: unknown): string[] | undefined =>
    Array.isArray(v) ? v.map((x) => (typeof x === "string" ? x : JSON.stringify(x))) : undefined;
  const pattern = Array.isArray(r["pattern"])
    ? r["pattern"].map((p: unknown): PatternElement => (Array.isArray(p) ? (strings(p) ?? []) : String(p)))
    : [];
  const decision = DECISIONS.includes(r["decision"] as Decision) ? (r["decision"] as Decision) : "prompt";
  const rule: Rule = { id: typeof r["id"] === "string" ? r["id"] : "", pattern, decision };
  if (r["exact"] === true) rule.exact = true;
  if (r["network"] === true) rule.network = true;
  else if (Array.isArray(r["network"])) rule.network = strings(r["network"]);
  if (r["other_hosts"] === "prompt") rule.other_hosts = "prompt";
  if (typeof r["justification"] === "string") rule.justification = r["justification"];
  const match = strings(r["match"]);
  if (match) rule.match = match;
  const notMatch = strings(r["not_match"]);
  if (notMatch) rule.not_match = notMatch;
  return rule;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The rules `theirs` has that `base` had not (by id): what another writer (an "always" answer) added. */
export function rulesAddedSince(base: string, theirs: string): Rule[] {
  const before = readRules(base);
  const after = readRules(theirs);
  if (!after.ok) return [];
  const known = new Set(before.ok ? before.rules.map((r) => r.id) : []);
  return after.rules.filter((r) => !known.has(r.id));
}

/**
 * Mine with what changed on disk since base merged in, when that is rules added (what an "always" answer
 * writes): `merged` is mine plus those rules; `rest` is false when theirs also changed something else
 * (then a merge cannot keep it, and the operator sees the diff).
 */
export function mergeAddedRules(base: string, mine: string, theirs: string): { merged: string; added: Rule[]; rest: boolean } {
  const added = rulesAddedSince(base, theirs);
  const mineIds = new Set((() => {
    const r = readRules(mine);
    return r.ok ? r.rules.map((x) => x.id) : [];
  })());
  let merged = mine;
  for (const rule of added) if (!mineIds.has(rule.id)) merged = applyEdits(merged, addRule(merged, rule));
  let baseWithAdded = base;
  for (const rule of added) baseWithAdded = applyEdits(baseWithAdded, addRule(baseWithAdded, rule));
  const same = (a: string, b: string) => {
    try {
      return JSON.stringify(JSON.parse(a)) === JSON.stringify(JSON.parse(b));
    } catch {
      return false;
    }
  };
  return { merged, added, rest: !same(baseWithAdded, theirs) };
}
