// A policy file that broke while the hub runs: the error (file:line:column and what is wrong) stays in
// view until a good version loads, and says plainly that the working policy is still in force.
import { useEffect, useState } from "react";
import { useFeed } from "./context";
import { visible } from "../lib/visible";

export function PolicyBanner() {
  const feed = useFeed();
  const [rejected, setRejected] = useState<{ code: string; message: string } | null>(null);
  useEffect(
    () =>
      feed.listen((items) => {
        for (const { event } of items) {
          if (event.kind === "policy_rejected") setRejected({ code: event.code, message: event.message });
          else if (event.kind === "policy_reloaded") setRejected(null);
        }
      }),
    [feed],
  );
  if (!rejected) return null;
  return (
    <div className="policy-banner" role="alert" data-testid="policy-rejected">
      <strong>The changed policy did not load — the working policy stays in force.</strong>
      <pre className="mono">{visible(rejected.message)}</pre>
      <span className="muted small">
        {visible(rejected.code)} · fix the file and save it; it reloads by itself
      </span>
    </div>
  );
}
