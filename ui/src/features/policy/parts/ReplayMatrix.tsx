// The before x after matrix of a replay: how many calls each decision of the policy in force would get
// under the draft. The diagonal is what stays; cells above "allow" are loosened and marked so.
import type { ReplaySummary } from "../../../backend/backend";

const ORDER = ["allow", "contain", "prompt", "forbidden", "tool_denied"];

export function ReplayMatrix({ summary }: { summary: ReplaySummary }) {
  const cell = (before: string, after: string): number =>
    before === after ? (summary.kept?.[before] ?? 0) : (summary.transitions[`${before} -> ${after}`] ?? 0);
  const seen = new Set<string>(ORDER.slice(0, 3));
  for (const key of Object.keys(summary.transitions)) key.split(" -> ").forEach((d) => seen.add(d));
  for (const key of Object.keys(summary.kept ?? {})) seen.add(key);
  const decisions = [...ORDER.filter((d) => seen.has(d)), ...[...seen].filter((d) => !ORDER.includes(d))];
  return (
    <table className="matrix" data-testid="replay-matrix">
      <thead>
        <tr>
          <th className="small">in force ↓ · draft →</th>
          {decisions.map((d) => (
            <th key={d}>{d}</th>
          ))}
        </tr>
      </thead>
      <tbody>
        {decisions.map((before) => (
          <tr key={before}>
            <th>{before}</th>
            {decisions.map((after) => {
              const n = cell(before, after);
              const kind = before === after ? "same" : after === "allow" ? "loosened" : "changed";
              return (
                <td key={after} className={n > 0 ? `cell-${kind}` : "cell-zero"} data-testid={`matrix-${before}-${after}`}>
                  {n.toLocaleString()}
                  {n > 0 && kind === "loosened" ? " ▲" : ""}
                </td>
              );
            })}
          </tr>
        ))}
      </tbody>
    </table>
  );
}
