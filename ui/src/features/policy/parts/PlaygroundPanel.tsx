// The playground: a shell command, or a whole tool call, judged by the hub's policy with the draft in its
// file's place (nothing runs), shown as its full trace; one click saves it as a test case of the draft
// that expects the decision it got.
import { useState } from "react";
import { parseRoute } from "../../../app/route";
import { useMutation } from "@tanstack/react-query";
import type { DraftTrial, LayerFile, TrialInput } from "../../../backend/backend";
import { useBackend } from "../../../app/context";
import { visible } from "../../../lib/visible";
import type { DraftContext } from "../DraftEditor";
import { addTest } from "../model";
import { TraceView } from "./TraceView";

/** A call the ledger browser brought (`#policy?try={"tool":…,"arguments":…}`), as the playground's inputs. */
function broughtCall(): { mode: "command" | "call"; script?: string; tool?: string; args?: string } | null {
  const text = new URLSearchParams(parseRoute(window.location.hash).params).get("try");
  if (!text) return null;
  try {
    const call = JSON.parse(text) as { tool?: unknown; arguments?: unknown };
    const command = (call.arguments as { command?: unknown } | null)?.command;
    if (call.tool === "shell" && typeof command === "string") return { mode: "command", script: command };
    return { mode: "call", tool: String(call.tool ?? ""), args: JSON.stringify(call.arguments ?? {}, null, 2) };
  } catch {
    return null;
  }
}

export function PlaygroundPanel({ draft, layers }: { draft: DraftContext; layers: LayerFile[] }) {
  const backend = useBackend();
  const [brought] = useState(broughtCall);
  const [mode, setMode] = useState<"command" | "call">(brought?.mode ?? "command");
  const [script, setScript] = useState(brought?.script ?? "git status && rm -rf ~");
  const [tool, setTool] = useState(brought?.tool ?? "read");
  const [args, setArgs] = useState(brought?.args ?? '{ "path": "README.md" }');
  const [saved, setSaved] = useState<string | null>(null);
  const trial = useMutation({
    mutationFn: (input: TrialInput) => backend.tryPolicyDraft(draft.file, draft.text, input),
  });
  const input = (): TrialInput | string => {
    if (mode === "command") return { kind: "command", script };
    try {
      return { kind: "call", tool, arguments: JSON.parse(args) };
    } catch (e) {
      return `the arguments are not JSON: ${String(e)}`;
    }
  };
  const run = () => {
    setSaved(null);
    const i = input();
    if (typeof i === "string") trial.reset();
    else trial.mutate(i);
  };
  const parsed = input();
  return (
    <div className="playground" data-testid="playground">
      <div className="mode" role="radiogroup" aria-label="What to try">
        {(["command", "call"] as const).map((m) => (
          <label key={m}>
            <input type="radio" checked={mode === m} onChange={() => setMode(m)} /> {m === "command" ? "shell command" : "tool call"}
          </label>
        ))}
      </div>
      {mode === "command" ? (
        <textarea
          className="mono"
          rows={2}
          value={script}
          aria-label="Shell command"
          data-testid="playground-command"
          onChange={(e) => setScript(e.target.value)}
          onKeyDown={(e) => {
            if (e.key === "Enter" && !e.shiftKey) {
              e.preventDefault();
              run();
            }
          }}
        />
      ) : (
        <div className="call-input">
          <input className="mono" value={tool} aria-label="Tool" onChange={(e) => setTool(e.target.value)} />
          <textarea className="mono" rows={3} value={args} aria-label="Arguments (JSON)" onChange={(e) => setArgs(e.target.value)} />
        </div>
      )}
      <div className="row">
        <button type="button" className="primary" onClick={run} data-testid="playground-try">
          Try it (Enter)
        </button>
        <button
          type="button"
          disabled={!draft.editable || !trial.data || typeof parsed === "string"}
          data-testid="playground-save-test"
          onClick={() => {
            if (!trial.data || typeof parsed === "string") return;
            const expect = expected(trial.data);
            const call = parsed.kind === "command" ? { name: "shell", arguments: { command: parsed.script } } : { name: parsed.tool, arguments: parsed.arguments };
            const name = parsed.kind === "command" ? `${parsed.script.slice(0, 60)} is ${expect}` : `${parsed.tool} is ${expect}`;
            draft.edit((text) => addTest(text, { name, call, expect }));
            setSaved(name);
          }}
        >
          Save as test case
        </button>
        {typeof parsed === "string" && <span className="bad small">{parsed}</span>}
        {saved && (
          <span className="small" role="status">
            added test “{visible(saved)}” to the draft
          </span>
        )}
      </div>
      {trial.isError && (
        <p role="alert" className="bad">
          {visible(String((trial.error as Error).message))}
        </p>
      )}
      {trial.data && <TraceView verdict={trial.data.verdict} layers={layers} testId="playground-trace" />}
    </div>
  );
}

/** The decision a test case expects of what the trial got. */
function expected(trial: DraftTrial): string {
  return trial.verdict.verdict === "blocked" ? trial.verdict.reason : trial.verdict.decision;
}
