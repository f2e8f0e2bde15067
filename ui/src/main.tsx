// The window's entry: the Tauri Backend, the app, the theme.
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { tauriBackend } from "./backend/tauri";
import { App } from "./app/App";
import "./app/theme.css";

const root = document.getElementById("root");
if (root) {
  createRoot(root).render(
    <StrictMode>
      <App backend={tauriBackend()} />
    </StrictMode>,
  );
}
