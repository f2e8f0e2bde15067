// Vite builds the window's assets into dist/ (embedded by the app crate); vitest runs the unit tests
// against the fake Backend in jsdom.
import { defineConfig } from "vitest/config";
import react from "@vitejs/plugin-react";

export default defineConfig({
  plugins: [react()],
  clearScreen: false,
  server: { port: 5173, strictPort: true },
  build: { target: "safari16", outDir: "dist", emptyOutDir: true, sourcemap: false },
  test: {
    environment: "jsdom",
    setupFiles: ["./src/test/setup.ts"],
    include: ["src/**/*.test.{ts,tsx}"],
    // Its published ES build has extensionless imports Node cannot resolve: vitest bundles it instead.
    server: { deps: { inline: ["codemirror-json-schema"] } },
  },
});
