// Calls whose outcome is unknown: an agent's call with an idempotency key was running when the hub
// stopped, so nobody knows whether its effect happened. A retry with the key is refused until the
// operator says: it happened (retries are told so), it failed (likewise), or run it again (the key is
// free). Shown in the inbox only while there are some: like an approval, each waits for a person.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useBackend } from "../../../app/context";
import { asBackendError, type EffectMarkOutcome, type EffectRow } from "../../../backend/backend";
import { absolute, ago } from "../../../lib/time";
import { useNow } from "../../../lib/useNow";
import { visible } from "../../../lib/visible";

/** The effects looked at (unknown ones come first). */
const LIMIT = 200;

const CHOICES: Array<{ outcome: EffectMarkOutcome; label: string; hint: string }> = [
  { outcome: "done", label: "It happened", hint: "retries are told it took effect, and do not run" },
  { outcome: "failed", label: "It failed", hint: "retries are told it failed, and do not run" },
  { outcome: "retryable", label: "Run it again", hint: "the next call with this key runs" },
];

export function UnknownOutcomes() {
  const backend = useBackend();
  const client = useQueryClient();
  const now = useNow();
  const effects = useQuery({
    queryKey: ["effects"],
    queryFn: () => backend.effects(LIMIT),
    refetchInterval: 5000,
  });
  const mark = useMutation({
    mutationFn: ({ effect, outcome }: { effect: EffectRow; outcome: EffectMarkOutcome }) =>
      backend.markEffect(effect.agent, effect.key, outcome, null),
    onSettled: () => client.invalidateQueries({ queryKey: ["effects"] }),
  });
  const unknown = (effects.data ?? []).filter((e) => e.state === "unknown");
  if (unknown.length === 0 && !mark.isError) return null;
  return (
    <section className="unknown-outcomes" aria-label="Unknown outcomes" data-testid="unknown-outcomes">
      <h2>
        Outcome unknown <span className="count">{unknown.length} to settle</span>
      </h2>
      <p className="muted small">
        The hub stopped while these calls ran. Their retries are refused until you say what happened.
      </p>
      {mark.isError && (
        <p className="failure" role="alert">
          Marking failed: {asBackendError(mark.error).message}
        </p>
      )}
      <table className="grid">
        <thead>
          <tr>
            <th>agent</th>
            <th>tool</th>
            <th>what it does</th>
            <th>idempotency key</th>
            <th>call</th>
            <th>claimed</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {unknown.map((e) => (
            <tr key={`${e.agent}\u0000${e.key}`} data-testid="unknown-outcome">
              <td className="mono">{visible(e.agent)}</td>
              <td className="mono">{visible(e.tool)}</td>
              <td className="mono" data-testid="effect-summary">
                {visible(e.summary ?? "")}
              </td>
              <td className="mono">{visible(e.key)}</td>
              <td className="mono" title={visible(e.call_id)}>
                {visible(e.call_id.slice(0, 12))}
              </td>
              <td title={absolute(e.claimed_at)}>{ago(e.claimed_at, now)}</td>
              <td className="actions">
                {CHOICES.map((c) => (
                  <button
                    key={c.outcome}
                    type="button"
                    title={c.hint}
                    data-testid={`mark-${c.outcome}`}
                    disabled={mark.isPending}
                    onClick={() => mark.mutate({ effect: e, outcome: c.outcome })}
                  >
                    {c.label}
                  </button>
                ))}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
