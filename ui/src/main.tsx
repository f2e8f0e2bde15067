// The window's entry: the Tauri Backend, the app, the theme.
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { tauriBackend } from "./backend/tauri";
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
      <App backend={tauriBackend()} />
    </StrictMode>,
  );
}
