// What a confined command's copy-on-write review did, read from the call's structured result (its
// `sandbox.changes` member, written by the hub): the changes kept (committed), held for the operator and
// discarded, each list bounded and each count whole. Paths and reasons are agent text: escape them
// where a person reads them.
import type { CallDetail, Containment, PathKind } from "../../backend/backend";

export type ChangeWithWhy = { path: string; why: string };

export type ReviewedChanges = {
  keptCount: number;
  kept: string[];
  heldCount: number;
  held: ChangeWithWhy[];
  discardedCount: number;
  discarded: ChangeWithWhy[];
};

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const count = (v: unknown): number => (typeof v === "number" && Number.isFinite(v) ? v : 0);
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((s): s is string => typeof s === "string") : []);
const withWhy = (v: unknown): ChangeWithWhy[] =>
  Array.isArray(v)
    ? v.filter(isRecord).map((c) => ({ path: typeof c.path === "string" ? c.path : "", why: typeof c.why === "string" ? c.why : "" }))
    : [];

/** The review of the call's command, or null when it ran no confined command (or recorded none). */
/**
 * The walls of a call that ran contained (allowed without asking because part of it could not be read):
 * the ledger stores its decision as `allow`; the action it ran with says contained.
 */
export function containmentOf(detail: CallDetail): Containment | null {
  for (const record of detail.records) {
    const contained = record.action?.sandbox?.contained;
    if (contained) return contained;
  }
  return null;
}

export function reviewedChanges(detail: CallDetail): ReviewedChanges | null {
  for (const part of detail.output) {
    if (part.type !== "other" || !isRecord(part.value)) continue;
    const sandbox = part.value.sandbox;
    const changes = isRecord(sandbox) ? sandbox.changes : undefined;
    if (!isRecord(changes)) continue;
    return {
      keptCount: count(changes.kept_count),
      kept: strings(changes.kept),
      heldCount: count(changes.held_count),
      held: withWhy(changes.held),
      discardedCount: count(changes.discarded_count),
      discarded: withWhy(changes.discarded),
    };
  }
  return null;
}

/** `path` relative to the command's folder `cwd` where it lies inside it, else whole. */
export function shownPath(path: string, cwd: string | null): string {
  if (!cwd) return path;
  const folder = cwd.endsWith("/") ? cwd : `${cwd}/`;
  return path.startsWith(folder) && path.length > folder.length ? path.slice(folder.length) : path;
}

/** What an undo does at a path, in words: from what the commit left (`now`) to what it puts back. */
export function undoWords(now: PathKind, again: PathKind): string {
  if (again === "nothing") return now === "folder" ? "removed (the command made this folder)" : "removed (the command made it)";
  if (now === "nothing") return again === "folder" ? "made again (the command deleted this folder)" : "put back (the command deleted it)";
  if (now === again) return again === "folder" ? "its mode put back" : "its old content put back";
  return `${again === "file" ? "the old file" : again === "link" ? "the old link" : "the old folder"} put back (the command left ${now === "file" ? "a file" : now === "link" ? "a link" : "a folder"})`;
}
