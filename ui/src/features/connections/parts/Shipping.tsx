// Where the hub ships its ledger: each sink (a team ledger in PostgreSQL, a copy in a file), how far it
// stands behind the hub's own ledger, and why it fails while it does (the ledger keeps what it has not
// taken). Shown only when the hub ships somewhere; refetched every 2 s.
import { useQuery } from "@tanstack/react-query";
import { useBackend } from "../../../app/context";
import type { SinkLag } from "../../../backend/backend";
import { visible } from "../../../lib/visible";

/** What a sink is, in an operator's words (its name is `team:URL` or `jsonl:FILE`). */
export function sinkLabel(sink: string): string {
  if (sink.startsWith("team:")) return `team ledger ${sink.slice("team:".length)}`;
  if (sink.startsWith("jsonl:")) return `copy to ${sink.slice("jsonl:".length)}`;
  return sink;
}

function stateOf(s: SinkLag): { words: string; className: string } {
  if (s.failing != null) return { words: `✕ failing: ${s.failing}`, className: "state-failed" };
  if (s.falling_behind) return { words: "▲ falling behind", className: "state-connecting" };
  if (s.records_behind + s.rows_behind > 0) return { words: "↻ shipping", className: "state-connecting" };
  return { words: "● up to date", className: "state-ready" };
}

export function Shipping() {
  const backend = useBackend();
  const shipping = useQuery({ queryKey: ["shipping"], queryFn: () => backend.shipping(), refetchInterval: 2000 });
  const sinks = shipping.data ?? [];
  if (sinks.length === 0) return null;
  return (
    <>
      <h2>Ledger shipping ({sinks.length})</h2>
      <table className="grid tabular" data-testid="shipping">
        <thead>
          <tr>
            <th>to</th>
            <th>state</th>
            <th className="num">records behind</th>
            <th className="num">other rows behind</th>
            <th className="num">shipped through</th>
          </tr>
        </thead>
        <tbody>
          {sinks.map((s) => {
            const state = stateOf(s);
            return (
              <tr key={s.sink} data-testid="sink" data-behind={s.records_behind + s.rows_behind}>
                <td className="mono">{visible(sinkLabel(s.sink))}</td>
                <td className={state.className}>{visible(state.words)}</td>
                <td className="num">{s.records_behind}</td>
                <td className="num">{s.rows_behind}</td>
                <td className="num">
                  {s.shipped_through} of {s.ledger_head}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </>
  );
}
