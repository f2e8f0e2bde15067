// A line diff as the API gives it (changed lines with context, runs of unchanged lines folded), in the
// colors of the rest of the window and with a sign on every line (never color alone).
import type { DiffLine } from "../../backend/backend";
import { visible } from "../visible";

export function Diff({ lines, testId }: { lines: DiffLine[]; testId?: string }) {
  if (lines.length === 0) return <p className="muted small">No change to the text.</p>;
  return (
    <table className="diff mono" data-testid={testId}>
      <tbody>
        {lines.map((line, i) => {
          switch (line.kind) {
            case "skipped":
              return (
                <tr key={i} className="diff-skipped">
                  <td colSpan={3}>⋯ {line.count} unchanged line{line.count === 1 ? "" : "s"}</td>
                </tr>
              );
            case "truncated":
              return (
                <tr key={i} className="diff-skipped" data-testid="diff-truncated">
                  <td colSpan={3}>
                    … and {line.count} more line{line.count === 1 ? "" : "s"}, not shown
                  </td>
                </tr>
              );
            case "same":
              return (
                <tr key={i}>
                  <td className="ln">{line.new}</td>
                  <td className="sign"> </td>
                  <td>{visible(line.text)}</td>
                </tr>
              );
            case "added":
              return (
                <tr key={i} className="diff-added">
                  <td className="ln">{line.new}</td>
                  <td className="sign">+</td>
                  <td>{visible(line.text)}</td>
                </tr>
              );
            case "removed":
              return (
                <tr key={i} className="diff-removed">
                  <td className="ln">{line.old}</td>
                  <td className="sign">−</td>
                  <td>{visible(line.text)}</td>
                </tr>
              );
          }
        })}
      </tbody>
    </table>
  );
}
