// The filter: a full-text search, a time range (presets or custom), and chips — one per value chosen
// for tool, status, why refused, who decided, what the policy said, what a command's changes came to (held,
// discarded, kept: no counts), rule, agent and session (and on a team ledger,
// host, OS user and hub) — each dimension with
// a menu of its values and their counts. Counts come fast from the writer's hourly aggregates
// (marked ≈ when the search or session could not be applied) and are replaced by exact ones when
// ready; they never hold up the table.
import { useEffect, useRef, useState } from "react";
import { useQuery } from "@tanstack/react-query";
import { useBackend } from "../../../app/context";
import type { CallFilter, Count, Facets } from "../../../backend/backend";
import { visible } from "../../../lib/visible";
import { CHANGES, DECISIONS, RANGES, REASONS, STATUSES, deciderWords, type LedgerQuery, type Range } from "../query";
import type { SetQuery } from "../useLedgerQuery";
import { count } from "../../../lib/numbers";

type ListField =
  | "tools"
  | "statuses"
  | "reasons"
  | "deciders"
  | "decisions"
  | "changes"
  | "owners"
  | "hosts"
  | "users"
  | "hubs";

/** A filter dimension: its chips' field, label, facet counts, fixed values, how a value reads, and
 * whether only a team ledger has it (shown when its counts or chips are). */
const DIMENSIONS: Array<{
  field: ListField | "rule";
  label: string;
  /** Where its values' counts are (none: fixed values, no counts). */
  facet?: keyof Omit<Facets, "total" | "approximate">;
  fixed?: readonly string[];
  /** A value in a person's words (the value itself stays what the filter holds); none: the value,
   * escaped, in monospace. */
  words?: (value: string) => string;
  team?: boolean;
}> = [
  { field: "tools", label: "Tool", facet: "tools" },
  { field: "statuses", label: "Status", facet: "statuses", fixed: STATUSES },
  // Retries answered from their first call and unknown outcomes are found here (idempotency keys).
  { field: "reasons", label: "Why refused", facet: "reasons", fixed: REASONS },
  { field: "decisions", label: "Policy said", facet: "policy_decisions", fixed: DECISIONS },
  // Calls whose changes were held for the operator or discarded (the most serious outcome of each call).
  { field: "changes", label: "Changes", fixed: CHANGES },
  { field: "deciders", label: "Decided by", facet: "decided_by", words: deciderWords },
  { field: "rule", label: "Rule", facet: "rules" },
  { field: "owners", label: "Agent", facet: "owners" },
  { field: "hosts", label: "Host", facet: "hosts", team: true },
  { field: "users", label: "User", facet: "users", team: true },
  { field: "hubs", label: "Hub", facet: "hubs", team: true },
];

export function useFacets(ledgerId: number, filter: CallFilter) {
  const backend = useBackend();
  const key = JSON.stringify(filter);
  const approx = useQuery({
    queryKey: ["ledger_facets", ledgerId, key, false],
    queryFn: () => backend.ledgerFacets(ledgerId, filter, false),
    staleTime: 5000,
  });
  const exact = useQuery({
    queryKey: ["ledger_facets", ledgerId, key, true],
    queryFn: () => backend.ledgerFacets(ledgerId, filter, true),
    staleTime: 5000,
  });
  return exact.data ?? approx.data;
}

export function FilterBar({
  ledgerId,
  filter,
  query,
  setQuery,
}: {
  ledgerId: number;
  filter: CallFilter;
  query: LedgerQuery;
  setQuery: SetQuery;
}) {
  const facets = useFacets(ledgerId, filter);
  const [menu, setMenu] = useState<string | null>(null);
  const openFacet = useRef<HTMLSpanElement | null>(null);
  // An open menu closes on Escape or a press anywhere outside it, as menus do: left open it covers the
  // call drawer's close button. Its Escape goes no further (the drawer beneath closes on the next one).
  useEffect(() => {
    if (menu === null) return;
    const outside = (e: PointerEvent) => {
      if (!(e.target instanceof Node) || !openFacet.current?.contains(e.target)) setMenu(null);
    };
    const escape = (e: KeyboardEvent) => {
      if (e.key === "Escape") {
        e.stopPropagation();
        setMenu(null);
      }
    };
    document.addEventListener("pointerdown", outside);
    document.addEventListener("keydown", escape);
    return () => {
      document.removeEventListener("pointerdown", outside);
      document.removeEventListener("keydown", escape);
    };
  }, [menu]);
  const values = (field: ListField | "rule"): string[] => (field === "rule" ? (query.rule ? [query.rule] : []) : query[field]);
  const toggle = (field: ListField | "rule", value: string) => {
    if (field === "rule") setQuery((q) => ({ rule: q.rule === value ? null : value, call: null }));
    else
      setQuery((q) => ({
        [field]: q[field].includes(value) ? q[field].filter((v) => v !== value) : [...q[field], value],
        call: null,
      }));
  };
  return (
    <div className="filter-bar" data-testid="filter-bar">
      <SearchBox value={query.search} onChange={(search) => setQuery({ search, call: null }, true)} />
      <RangePicker query={query} setQuery={setQuery} />
      {DIMENSIONS.map((d) => {
        const counts: Count[] = (d.facet && facets?.[d.facet]) || [];
        const chosen = values(d.field);
        const listed = [...new Set([...(d.fixed ?? []), ...counts.map((c) => c.key), ...chosen])];
        if (d.team && listed.length === 0) return null;
        const countOf = (v: string) => counts.find((c) => c.key === v)?.count;
        return (
          <span key={d.field} className="facet" ref={menu === d.field ? openFacet : undefined}>
            <button
              type="button"
              className={`facet-button${chosen.length ? " active" : ""}`}
              aria-expanded={menu === d.field}
              data-testid={`facet-${d.field}`}
              onClick={() => setMenu(menu === d.field ? null : d.field)}
            >
              {d.label} ▾
            </button>
            {menu === d.field && (
              <div className="facet-menu" role="menu" data-testid={`facet-menu-${d.field}`}>
                {listed.length === 0 && <p className="muted">No values in this selection.</p>}
                {listed.slice(0, 200).map((v) => (
                  <label key={v} className="facet-item">
                    <input type="checkbox" checked={chosen.includes(v)} onChange={() => toggle(d.field, v)} />
                    <ValueText value={v} words={d.words} />
                    {d.facet && (
                      <span className="facet-count muted" data-testid="facet-count">
                        {countOf(v) === undefined ? "0" : `${facets?.approximate ? "≈" : ""}${count(countOf(v) ?? 0)}`}
                      </span>
                    )}
                  </label>
                ))}
              </div>
            )}
          </span>
        );
      })}
      <div className="chips" data-testid="chips">
        {DIMENSIONS.flatMap((d) =>
          values(d.field).map((v) => (
            <span key={`${d.field}:${v}`} className="chip" data-testid="chip">
              {d.label}: <ValueText value={v} words={d.words} />
              <button type="button" aria-label={`Remove ${d.label} ${d.words ? d.words(v) : v}`} onClick={() => toggle(d.field, v)}>
                ×
              </button>
            </span>
          )),
        )}
        {query.session && (
          <span className="chip" data-testid="chip">
            Session: <span className="mono">{visible(query.session)}</span>
            <button type="button" aria-label="Remove session" onClick={() => setQuery({ session: null, call: null })}>
              ×
            </button>
          </span>
        )}
        {facets && (
          <span className="muted match-count" data-testid="match-count">
            {facets.approximate ? "≈" : ""}
            {count(facets.total)} {facets.total === 1 ? "call" : "calls"}
          </span>
        )}
      </div>
    </div>
  );
}

/** A filter value as its dimension names it: in words (the value as the title), or the value escaped. */
function ValueText({ value, words }: { value: string; words?: (value: string) => string }) {
  return words ? <span title={visible(value)}>{words(value)}</span> : <span className="mono">{visible(value)}</span>;
}

function SearchBox({ value, onChange }: { value: string; onChange: (v: string) => void }) {
  const [text, setText] = useState(value);
  const last = useRef(value);
  useEffect(() => {
    if (value !== last.current) {
      last.current = value;
      setText(value);
    }
  }, [value]);
  useEffect(() => {
    if (text === last.current) return;
    const timer = window.setTimeout(() => {
      last.current = text;
      onChange(text);
    }, 250);
    return () => window.clearTimeout(timer);
  }, [text, onChange]);
  return (
    <input
      type="search"
      className="search"
      placeholder="Search arguments and results…"
      aria-label="Search calls"
      data-testid="ledger-search"
      value={text}
      onChange={(e) => setText(e.target.value)}
    />
  );
}

/** `2026-11-30T14:05` (local) of an ISO time, for datetime-local inputs. */
const localInput = (iso: string | null): string => {
  if (!iso) return "";
  const d = new Date(iso);
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
};

function RangePicker({ query, setQuery }: { query: LedgerQuery; setQuery: SetQuery }) {
  const custom = !query.range && (query.since || query.until);
  return (
    <span className="range" data-testid="range">
      <select
        aria-label="Time range"
        data-testid="range-select"
        value={query.range ?? (custom ? "custom" : "all")}
        onChange={(e) => {
          const v = e.target.value;
          if (v === "all") setQuery({ range: null, since: null, until: null });
          else if (v === "custom") setQuery({ range: null, since: new Date(Date.now() - 86_400_000).toISOString(), until: null });
          else setQuery({ range: v as Range, since: null, until: null });
        }}
      >
        <option value="all">All time</option>
        {Object.keys(RANGES).map((r) => (
          <option key={r} value={r}>
            Last {r}
          </option>
        ))}
        <option value="custom">Custom…</option>
      </select>
      {custom && (
        <>
          <input
            type="datetime-local"
            aria-label="From"
            value={localInput(query.since)}
            onChange={(e) => setQuery({ since: e.target.value ? new Date(e.target.value).toISOString() : null }, true)}
          />
          <input
            type="datetime-local"
            aria-label="Until"
            value={localInput(query.until)}
            onChange={(e) => setQuery({ until: e.target.value ? new Date(e.target.value).toISOString() : null }, true)}
          />
        </>
      )}
    </span>
  );
}
