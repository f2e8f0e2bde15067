// The inbox's keys: each answer has a digit and a letter, shown on its button and listed by `?`.
import type { Choice } from "../../backend/backend";

export interface AnswerKey {
  choice: Choice;
  label: string;
  keys: [string, string];
  hint: string;
}

export const ANSWER_KEYS: AnswerKey[] = [
  { choice: "once", label: "Allow once", keys: ["1", "o"], hint: "run this call only" },
  { choice: "session", label: "This session", keys: ["2", "s"], hint: "allow the same action again in this agent session" },
  { choice: "always", label: "Always", keys: ["3", "a"], hint: "write a rule to the policy file" },
  { choice: "deny", label: "Deny", keys: ["4", "d"], hint: "refuse; the agent is told" },
];

export const OTHER_KEYS: Array<[string, string]> = [
  ["n", "deny with a note to the agent"],
  ["j / ↓", "next card"],
  ["k / ↑", "previous card"],
  ["?", "show or hide these keys"],
  ["Alt+1 / 2 / 3", "Approvals / Live / Connections"],
];

/** The answer a key gives, if any. */
export function choiceOfKey(key: string): Choice | null {
  const k = key.toLowerCase();
  return ANSWER_KEYS.find((a) => a.keys.includes(k))?.choice ?? null;
}
