// Stats over the calls the filter selects — the same filter as the table, so every chart narrows
// with the chips: calls over time by outcome, top tools, who decided, the shell commands most
// prompted for and most blocked, how approvals went, and latency percentiles per tool. Clicking a
// tool or a command narrows the filter to it; dragging across the chart narrows the time range.
import { useQuery } from "@tanstack/react-query";
import { useBackend } from "../../../app/context";
import type { CallFilter, CommandCount, Count } from "../../../backend/backend";
import { visible } from "../../../lib/visible";
import { duration } from "../columns";
import { deciderWords } from "../query";
import type { SetQuery } from "../useLedgerQuery";
import { TimeChart } from "./TimeChart";
import { count } from "../../../lib/numbers";

export function StatsPanel({ ledgerId, filter, setQuery }: { ledgerId: number; filter: CallFilter; setQuery: SetQuery }) {
  const backend = useBackend();
  const key = JSON.stringify(filter);
  const stats = useQuery({
    queryKey: ["ledger_stats", ledgerId, key],
    queryFn: async () => {
      const t0 = performance.now();
      const s = await backend.ledgerStats(ledgerId, filter, null);
      return { stats: s, ms: performance.now() - t0 };
    },
  });
  // The audit queries read call bodies (hundreds of ms over a million calls, a core each): asked once
  // the stats are shown, so they never take the cores the stats need.
  const after = stats.isSuccess;
  const approvals = useQuery({
    queryKey: ["ledger_approvals", ledgerId, key],
    queryFn: () => backend.ledgerApprovals(ledgerId, filter),
    enabled: after,
  });
  const prompted = useQuery({
    queryKey: ["ledger_top_commands", ledgerId, key, "prompted"],
    queryFn: () => backend.ledgerTopCommands(ledgerId, filter, "prompted", 10),
    enabled: after,
  });
  const blocked = useQuery({
    queryKey: ["ledger_top_commands", ledgerId, key, "blocked"],
    queryFn: () => backend.ledgerTopCommands(ledgerId, filter, "blocked", 10),
    enabled: after && prompted.isSuccess,
  });
  if (stats.isError) return <p className="error">{String((stats.error as Error).message)}</p>;
  if (!stats.data) return <p className="muted">Counting…</p>;
  const s = stats.data.stats;
  const statusCount = (k: string) => s.by_status.find((c) => c.key === k)?.count ?? 0;
  const a = approvals.data;
  const asked = a ? a.approved + a.denied + a.timed_out + a.withdrawn : 0;
  return (
    <div className="stats-panel" data-testid="stats-panel">
      <div className="stat-tiles">
        <Tile label="calls" value={count(s.total)} testId="stat-total" />
        <Tile label="blocked" value={`${count(statusCount("blocked"))} (${pct(statusCount("blocked"), s.total)})`} />
        <Tile label="errors" value={count(statusCount("error"))} />
        <Tile label="approvals asked" value={a ? count(a.asked) : "…"} />
        <Tile label="operator answered in (p50 / p90)" value={a ? `${duration(a.wait_p50_us) || "–"} / ${duration(a.wait_p90_us) || "–"}` : "…"} />
        <Tile label="prompts timed out" value={a ? pct(a.timed_out, asked) : "…"} />
      </div>
      <p className="muted stats-source" data-testid="stats-source">
        {s.source === "rollup" ? "From the writer's hourly aggregates" : "Counted over the calls"} in{" "}
        {stats.data.ms.toFixed(0)} ms{s.durations_exact ? "" : " · latency percentiles within ±9 %"}
      </p>
      <h3>Calls over time</h3>
      {s.buckets.length === 0 ? (
        <p className="muted">No call in this selection.</p>
      ) : (
        <TimeChart
          buckets={s.buckets}
          bucketUs={s.bucket_us}
          onRange={(since, until) =>
            setQuery({ range: null, since: new Date(since / 1000).toISOString(), until: new Date(until / 1000).toISOString() })
          }
        />
      )}
      <div className="stats-grid">
        <section>
          <h3>Top tools</h3>
          <Bars counts={s.by_tool.slice(0, 12)} total={s.total} onPick={(tool) => setQuery((q) => ({ tools: [...new Set([...q.tools, tool])] }))} testId="top-tools" />
        </section>
        <section>
          <h3>Decided by</h3>
          <Bars
            counts={s.by_decided_by}
            total={s.total}
            onPick={(d) => setQuery((q) => ({ deciders: [...new Set([...q.deciders, d])] }))}
            words={deciderWords}
            testId="stats-decided-by"
          />
        </section>
        <section>
          <h3>Most prompted commands</h3>
          <Commands list={prompted.data} onPick={(c) => setQuery({ search: c })} testId="top-prompted" />
        </section>
        <section>
          <h3>Most blocked commands</h3>
          <Commands list={blocked.data} onPick={(c) => setQuery({ search: c })} testId="top-blocked" />
        </section>
      </div>
      <section>
        <h3>Latency per tool</h3>
        <table className="latency" data-testid="latency">
          <thead>
            <tr>
              <th>Tool</th>
              <th>Calls that ran</th>
              <th>p50</th>
              <th>p95</th>
              <th>max</th>
            </tr>
          </thead>
          <tbody>
            {s.durations.slice(0, 30).map((d) => (
              <tr key={d.tool}>
                <td className="mono">{visible(d.tool)}</td>
                <td>{count(d.count)}</td>
                <td>{duration(d.p50_us)}</td>
                <td>{duration(d.p95_us)}</td>
                <td>{duration(d.max_us)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </section>
    </div>
  );
}

const pct = (n: number, of: number) => (of > 0 ? `${((100 * n) / of).toFixed(n * 1000 < of ? 2 : 1)} %` : "–");

function Tile({ label, value, testId }: { label: string; value: string; testId?: string }) {
  return (
    <div className="tile">
      <div className="tile-value" data-testid={testId}>
        {value}
      </div>
      <div className="tile-label muted">{label}</div>
    </div>
  );
}

/** Counts as bars; a key reads as `words` say (the key stays what a click picks), else escaped, in monospace. */
function Bars({
  counts,
  total,
  onPick,
  words,
  testId,
}: {
  counts: Count[];
  total: number;
  onPick: (k: string) => void;
  words?: (key: string) => string;
  testId?: string;
}) {
  const max = Math.max(1, ...counts.map((c) => c.count));
  if (counts.length === 0) return <p className="muted">None.</p>;
  return (
    <ul className="bars" data-testid={testId}>
      {counts.map((c) => (
        <li key={c.key}>
          <button type="button" className="bar-row" onClick={() => onPick(c.key)} title={`${words ? `${visible(c.key)}: ` : ""}${c.count} of ${total}`}>
            {words ? <span className="bar-label">{words(c.key)}</span> : <span className="bar-label mono">{visible(c.key)}</span>}
            <span className="bar-track">
              <span className="bar-fill" style={{ width: `${(100 * c.count) / max}%` }} />
            </span>
            <span className="bar-count">{count(c.count)}</span>
          </button>
        </li>
      ))}
    </ul>
  );
}

function Commands({ list, onPick, testId }: { list: CommandCount[] | undefined; onPick: (c: string) => void; testId?: string }) {
  if (!list) return <p className="muted">Counting…</p>;
  if (list.length === 0) return <p className="muted">None.</p>;
  return (
    <ol className="commands" data-testid={testId}>
      {list.map((c) => (
        <li key={c.command}>
          <button type="button" className="link-row" onClick={() => onPick(c.command)}>
            <span className="mono">{visible(c.command)}</span> <span className="muted">× {count(c.calls)}</span>
          </button>
        </li>
      ))}
    </ol>
  );
}
