// One pending call: who asks (agent, session), which tool, where (cwd), the countdown to its deadline
// and what happens then, why the policy asks, what it would run (parsed sub-commands and the rules with
// file:line), the walls it will run inside, the four answers with their keys, and what an answer is bound
// to (the digest of the arguments shown, the policy version that asked).
import { useState } from "react";
import type { AgentSession, Approval, Choice } from "../../../backend/backend";
import { Kbd } from "../../../lib/ui/Kbd";
import { DecisionBadge } from "../../../lib/ui/DecisionBadge";
import { absolute, clock, millis } from "../../../lib/time";
import { useFirstTime } from "../../../lib/useFirstTime";
import { visible } from "../../../lib/visible";
import { ANSWER_KEYS } from "../keys";
import { Paths, Rules, SubCommands } from "./Evidence";
import { FileChangeView } from "./FileChangeView";
import { SandboxFacts } from "./SandboxFacts";

export interface ApprovalCardProps {
  approval: Approval;
  /** Identical calls waiting with it (itself included); an answer covers them all. */
  count: number;
  session: AgentSession | undefined;
  now: number;
  selected: boolean;
  answering: boolean;
  /** The deny-with-note field is open. */
  noting: boolean;
  onSelect(): void;
  onAnswer(choice: Choice, note?: string): void;
  onNote(open: boolean): void;
}

export function ApprovalCard(props: ApprovalCardProps) {
  const { approval: a, count, session, now, selected, answering, noting } = props;
  const left = (millis(a.deadline) - now) / 1000;
  const always = a.always.offered === "yes";
  const command = a.action.command;
  const host = a.action.kind === "network" && a.action.operation === "connect" ? a.action.target : null;
  const shownAt = useFirstTime(true);
  return (
    <article
      className={`card${selected ? " selected" : ""}`}
      data-testid="approval-card"
      data-approval-id={a.id}
      data-arguments-sha256={a.arguments_sha256}
      data-shown-at={shownAt}
      aria-current={selected || undefined}
      onClick={props.onSelect}
    >
      <header className="card-head">
        <span className="tool mono">{visible(a.tool)}</span>
        {a.hub != null && (
          <span className="hub-badge mono" data-testid="approval-hub" title="the hub this call waits on">
            on {visible(a.hub)}
          </span>
        )}
        <span className="who">
          {session
            ? `${visible(session.client)} ${visible(session.version)}`
            : a.hub != null
              ? "agent"
              : "agent (session closed)"}
          <span className="muted"> · session {visible(a.session_id.slice(0, 8))}</span>
        </span>
        <span className={`countdown${left < 20 ? " urgent" : ""}`} title={`deadline ${absolute(a.deadline)}`}>
          {clock(left)} left <span className="muted">· then denied (timeout)</span>
        </span>
      </header>
      {count > 1 && (
        <p className="identical" data-testid="identical">
          ×{count} identical calls wait — an answer here answers all {count}
        </p>
      )}
      {host != null && (
        <p className="host-ask" data-testid="host-ask">
          a running command asks to reach <strong className="mono">{visible(host)}</strong>, which its rule does
          not name
        </p>
      )}
      {command != null && (
        <pre className="command mono" data-testid="command">
          <span className="prompt-sign" aria-hidden="true">$ </span>
          {visible(command)}
        </pre>
      )}
      <dl className="facts">
        {a.action.cwd != null && (
          <>
            <dt>in</dt>
            <dd className="mono">{visible(a.action.cwd)}</dd>
          </>
        )}
        <dt>policy</dt>
        <dd>
          <DecisionBadge decision={a.evaluation?.decision ?? "prompt"} />{" "}
          {a.reason ? <span className="reason">{visible(a.reason)}</span> : null}
        </dd>
        {a.action.sandbox != null && (
          <>
            <dt>walls</dt>
            <SandboxFacts profile={a.action.sandbox} />
          </>
        )}
      </dl>
      {a.evaluation && (
        <div className="evidence">
          <SubCommands evaluation={a.evaluation} />
          <Rules evaluation={a.evaluation} />
          <Paths evaluation={a.evaluation} />
        </div>
      )}
      {a.file_change && <FileChangeView change={a.file_change} />}
      {command == null && !a.file_change && (
        <pre className="arguments mono" data-testid="arguments">
          {(JSON.stringify(a.arguments, null, 2) ?? "").split("\n").map(visible).join("\n")}
        </pre>
      )}
      <footer className="answers">
        {ANSWER_KEYS.map((k) => {
          const disabled = answering || (k.choice === "always" && !always);
          const title =
            k.choice === "always" && a.always.offered === "no" ? `not offered: ${a.always.why}` : k.hint;
          return (
            <button
              key={k.choice}
              type="button"
              className={`answer answer-${k.choice}`}
              data-testid={`answer-${k.choice}`}
              disabled={disabled}
              title={title}
              onClick={(e) => {
                e.stopPropagation();
                props.onAnswer(k.choice);
              }}
            >
              <Kbd>{k.keys[0]}</Kbd>
              <Kbd>{k.keys[1]}</Kbd> {k.label}
              {k.choice === "always" ? "…" : ""}
            </button>
          );
        })}
        {!noting && (
          <button
            type="button"
            className="link"
            disabled={answering}
            onClick={(e) => {
              e.stopPropagation();
              props.onNote(true);
            }}
          >
            <Kbd>n</Kbd> deny with a note…
          </button>
        )}
        {noting && <DenyNote onDeny={(note) => props.onAnswer("deny", note)} onCancel={() => props.onNote(false)} />}
      </footer>
      <p className="muted small" data-testid="always-offer">
        {a.always.offered === "yes" && a.always.creates ? (
          <>
            Always creates your policy <span className="mono">{visible(a.always.file)}</span> (the built-in default's
            rules, plus {a.always.rules.map((r) => visible(r.id)).join(", ") || "a rule"})
          </>
        ) : a.always.offered === "yes" && host != null ? (
          <>
            Always adds <span className="mono">{visible(host)}</span> to rule{" "}
            <span className="mono">{visible(a.matched_rules[0]?.id ?? "")}</span> in{" "}
            <span className="mono">{visible(a.always.file)}</span>
          </>
        ) : a.always.offered === "yes" ? (
          <>
            Always writes {a.always.rules.map((r) => visible(r.id)).join(", ") || "a rule"} to{" "}
            <span className="mono">{visible(a.always.file)}</span>
          </>
        ) : (
          <>Always is not offered: {visible(a.always.why)}</>
        )}
      </p>
      <p
        className="muted small"
        data-testid="binding"
        title={`arguments sha256 ${a.arguments_sha256}; policy version ${a.policy_version ?? "none"}`}
      >
        An answer here approves these arguments only (sha256{" "}
        <span className="mono">{visible(a.arguments_sha256.slice(0, 12))}…</span>), under policy{" "}
        <span className="mono">{a.policy_version != null ? visible(a.policy_version.slice(0, 12)) : "none"}</span>
      </p>
    </article>
  );
}

function DenyNote({ onDeny, onCancel }: { onDeny(note: string): void; onCancel(): void }) {
  const [note, setNote] = useState("");
  return (
    <form
      className="deny-note"
      onSubmit={(e) => {
        e.preventDefault();
        onDeny(note);
      }}
      onClick={(e) => e.stopPropagation()}
    >
      <input
        autoFocus
        data-testid="deny-note"
        placeholder="Note for the agent (optional) — Enter denies, Esc cancels"
        value={note}
        onChange={(e) => setNote(e.target.value)}
        onKeyDown={(e) => {
          if (e.key === "Escape") onCancel();
          e.stopPropagation();
        }}
      />
      <button type="submit" className="answer answer-deny">
        Deny
      </button>
    </form>
  );
}
