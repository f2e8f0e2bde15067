// The entry of the window and of the browser console: the Backend this page runs on (Tauri's IPC in the
// desktop app, the hub's command table over HTTP in a browser), the app, the theme. Nothing below this
// file knows which one it got.
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { isTauri } from "@tauri-apps/api/core";
import { tauriBackend } from "./backend/tauri";
import { browserNotifications, httpBackend } from "./backend/http";
import { App } from "./app/App";
import "./app/theme.css";

// WebKitGTK under `LANG=C` reports the language "C", which Intl refuses: a library that formats numbers
// for navigator.language (uPlot, in the lazily loaded ledger view) would throw. Such a window reads en-US.
try {
  new Intl.NumberFormat(navigator.language);
} catch {
  Object.defineProperty(navigator, "language", { value: "en-US", configurable: true });
  Object.defineProperty(navigator, "languages", { value: ["en-US"], configurable: true });
}

const root = document.getElementById("root");
if (root) {
  createRoot(root).render(
    <StrictMode>
      <App backend={isTauri() ? tauriBackend() : httpBackend({ notify: browserNotifications() })} />
    </StrictMode>,
  );
}
