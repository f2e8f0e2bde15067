// Who is logged in to this console, and the way out: shown where the Backend has a session (a browser
// console's login), nothing where it has none (the desktop app is its user's own window).
import { useEffect, useState } from "react";
import type { ConsoleSession } from "../backend/backend";
import { visible } from "../lib/visible";
import { useBackend } from "./context";

export function SessionLine() {
  const backend = useBackend();
  const [session, setSession] = useState<ConsoleSession | null>(null);
  useEffect(() => {
    let live = true;
    backend.consoleSession().then(
      (s) => live && setSession(s),
      () => undefined,
    );
    return () => {
      live = false;
    };
  }, [backend]);
  if (!session) return null;
  const until = new Date(session.expires_at_ms).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  return (
    <span className="session-line muted" data-testid="console-session" title={`this login ends by ${until}`}>
      {visible(session.operator)} (browser)
      <button type="button" className="link" data-testid="logout" onClick={() => void backend.logout()}>
        Log out
      </button>
    </span>
  );
}
