// Verify the open ledger: its hash chain and signed checkpoints checked against the hub's key, the
// verdict first (intact, intact up to the newest records, or broken at a named record), then what was
// counted, then every break found. The ledger is read, never changed.
import { useQuery } from "@tanstack/react-query";
import { useBackend } from "../../../app/context";
import type { BreakKind, VerifyReport } from "../../../backend/backend";
import { count } from "../../../lib/numbers";
import { visible } from "../../../lib/visible";

/** What each kind of break means, in a few words. */
const BREAK: Record<BreakKind, string> = {
  changed: "changed",
  deleted: "deleted",
  unlinked: "no link",
  malformed: "malformed",
  derived: "column changed",
  seal_mismatch: "checkpoint mismatch",
  seal_signature: "bad signature",
  truncated: "tail removed",
  unsealed: "not sealed",
  journal: "journal",
  unproven: "tail unproven",
};

function Verdict({ report }: { report: VerifyReport }) {
  if (report.verdict === "intact") {
    return (
      <p className="verify-verdict verify-ok" data-testid="verify-verdict" data-verdict="intact">
        ✓ Intact: every chained record links and is signed with the hub's key.
      </p>
    );
  }
  if (report.verdict === "intact_unsealed_tail" && report.sealed === 0) {
    return (
      <p className="verify-verdict verify-pending" data-testid="verify-verdict" data-verdict="intact_unsealed_tail">
        ✓ Every record links. None is sealed yet: the hub signs a checkpoint every 1,024 records and when it stops.
      </p>
    );
  }
  if (report.verdict === "intact_unsealed_tail") {
    return (
      <p className="verify-verdict verify-pending" data-testid="verify-verdict" data-verdict="intact_unsealed_tail">
        ✓ Intact up to record {count(report.sealed)} of the chain; the {count(report.chained - report.sealed)} newest wait for their checkpoint (the hub
        is writing this ledger).
      </p>
    );
  }
  const first = report.breaks[0];
  return (
    <p className="verify-verdict verify-broken" role="alert" data-testid="verify-verdict" data-verdict="broken">
      ✗ Broken{first?.record_id != null ? ` at record ${first.record_id}` : ""}
      {first ? ` (${BREAK[first.kind]})` : ""}: the ledger was changed after it was written. {count(report.break_count)}{" "}
      {report.break_count === 1 ? "break" : "breaks"} below.
    </p>
  );
}

export function VerifyDialog({ ledgerId, onClose }: { ledgerId: number; onClose: () => void }) {
  const backend = useBackend();
  const run = useQuery({ queryKey: ["verify_ledger", ledgerId], queryFn: () => backend.verifyLedger(ledgerId), gcTime: 0, retry: false });
  const report = run.data;
  return (
    <div className="confirm" role="dialog" aria-modal="true" aria-label="Verify the ledger" data-testid="verify-dialog">
      <div className="confirm-box verify-box">
        <h2>Verify the ledger</h2>
        {run.isFetching && <p className="muted" data-testid="verify-running">Checking every record's link and every checkpoint's signature…</p>}
        {run.error && (
          <p className="error" role="alert" data-testid="verify-failed">
            {visible(String((run.error as { message?: string }).message ?? run.error))}
          </p>
        )}
        {report && !run.isFetching && (
          <>
            <Verdict report={report} />
            <dl className="verify-counts" data-testid="verify-counts">
              <dt>Chained records</dt>
              <dd>{count(report.chained)}</dd>
              <dt>Sealed with the key</dt>
              <dd>{count(report.sealed)}</dd>
              <dt>Checkpoints valid</dt>
              <dd>
                {count(report.checkpoints_valid)} of {count(report.checkpoints)}
              </dd>
              {report.unchained > 0 && (
                <>
                  <dt>Older, unchained</dt>
                  <dd title="written before this ledger had a hash chain: neither proven nor disproven">{count(report.unchained)}</dd>
                </>
              )}
              {report.journaled > 0 && (
                <>
                  <dt>Only in the journal</dt>
                  <dd>{count(report.journaled)}</dd>
                </>
              )}
              <dt>Key</dt>
              <dd className="mono" title={report.key}>
                {report.key.slice(0, 16)}…
              </dd>
            </dl>
            {report.breaks.length > 0 && (
              <ol className="verify-breaks" data-testid="verify-breaks">
                {report.breaks.map((b, i) => (
                  <li key={i}>
                    <span className="verify-kind">{BREAK[b.kind]}</span>
                    {b.record_id != null && <span className="mono"> record {b.record_id}</span>}: {visible(b.message)}
                  </li>
                ))}
                {report.break_count > report.breaks.length && <li className="muted">… and {count(report.break_count - report.breaks.length)} more</li>}
              </ol>
            )}
          </>
        )}
        <div className="dialog-buttons">
          <button type="button" data-testid="verify-again" disabled={run.isFetching} onClick={() => void run.refetch()}>
            Verify again
          </button>
          <button type="button" className="primary" onClick={onClose}>
            Close
          </button>
        </div>
      </div>
    </div>
  );
}
