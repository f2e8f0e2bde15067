// Which columns the calls table shows, in order: a menu of every column with a checkbox.
import { useState } from "react";
import { COLUMNS, DEFAULT_COLUMNS } from "../columns";
import type { LedgerQuery } from "../query";
import type { SetQuery } from "../useLedgerQuery";

export function ColumnChooser({ query, setQuery }: { query: LedgerQuery; setQuery: SetQuery }) {
  const [open, setOpen] = useState(false);
  const shown = query.columns ?? DEFAULT_COLUMNS;
  const toggle = (id: string) => {
    const next = shown.includes(id) ? shown.filter((c) => c !== id) : COLUMNS.map((c) => c.id).filter((c) => c === id || shown.includes(c));
    if (next.length === 0) return;
    setQuery({ columns: next.join(",") === DEFAULT_COLUMNS.join(",") ? null : next }, true);
  };
  return (
    <span className="menu-anchor">
      <button type="button" aria-expanded={open} data-testid="columns-button" onClick={() => setOpen(!open)}>
        Columns ▾
      </button>
      {open && (
        <div className="facet-menu menu-right" role="menu" data-testid="columns-menu">
          {COLUMNS.map((c) => (
            <label key={c.id} className="facet-item">
              <input type="checkbox" checked={shown.includes(c.id)} onChange={() => toggle(c.id)} /> {c.label}
            </label>
          ))}
          <button type="button" className="link" onClick={() => setQuery({ columns: null, widths: {} }, true)}>
            Reset columns and widths
          </button>
        </div>
      )}
    </span>
  );
}
