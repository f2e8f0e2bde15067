// Other hubs the app's inbox spans: a forwarded or remote hub attached by its address and operator token
// (the token stays in the app's memory), listed with the label each of its cards carries. Shown only where
// the Backend can attach hubs (the desktop app).
import { useState, type FormEvent } from "react";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useBackend } from "../../../app/context";
import { asBackendError } from "../../../backend/backend";
import { visible } from "../../../lib/visible";

export function OtherHubs() {
  const backend = useBackend();
  const queryClient = useQueryClient();
  const hubs = useQuery({ queryKey: ["attached_hubs"], queryFn: () => backend.attachedHubs() });
  const [url, setUrl] = useState("");
  const [token, setToken] = useState("");
  const [failure, setFailure] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  if (hubs.data == null) return null;
  const attach = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setFailure(null);
    try {
      queryClient.setQueryData(["attached_hubs"], await backend.attachHub(url, token));
      setUrl("");
      setToken("");
    } catch (err) {
      setFailure(asBackendError(err).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <h2>Other hubs ({hubs.data.length})</h2>
      <p className="muted small">
        Their waiting calls join the approvals inbox, each card saying which hub; each answer goes to its own hub.
      </p>
      <ul className="plain" data-testid="attached-hubs">
        {hubs.data.map((h) => (
          <li key={h.url} data-testid="attached-hub">
            <span className="mono">{visible(h.label)}</span> <span className="muted small">{visible(h.url)}</span>
          </li>
        ))}
      </ul>
      <form className="attach-hub" onSubmit={(e) => void attach(e)}>
        <input
          data-testid="attach-url"
          aria-label="Hub address"
          placeholder="http://127.0.0.1:7392"
          value={url}
          onChange={(e) => setUrl(e.target.value)}
        />
        <input
          data-testid="attach-token"
          aria-label="Its operator token"
          type="password"
          placeholder="its operator token"
          value={token}
          onChange={(e) => setToken(e.target.value)}
        />
        <button type="submit" data-testid="attach-hub" disabled={busy || !url || !token}>
          Attach
        </button>
      </form>
      {failure && (
        <p className="failure" data-testid="attach-error">
          {failure}
        </p>
      )}
    </>
  );
}
