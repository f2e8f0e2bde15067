// Vitest set-up: DOM matchers, and a clean DOM after each test.
import "@testing-library/jest-dom/vitest";
import { cleanup } from "@testing-library/react";
import { afterEach } from "vitest";

afterEach(() => cleanup());

// jsdom lays nothing out, so every element measures 0×0: a virtualized list (the live calls) would show
// no rows. Its scroll areas (the live calls, the ledger's calls) measure as a window's (1200×720) here, so its first rows render as in the app.
for (const [property, size] of [
  ["clientWidth", 1200],
  ["clientHeight", 720],
] as const) {
  const jsdom = Object.getOwnPropertyDescriptor(HTMLElement.prototype, property) ??
    Object.getOwnPropertyDescriptor(Element.prototype, property);
  Object.defineProperty(HTMLElement.prototype, property, {
    configurable: true,
    get(this: HTMLElement) {
      return this.dataset.testid === "live-scroll" || this.dataset.testid === "calls-scroll" ? size : (jsdom?.get?.call(this) ?? 0);
    },
  });
}

// jsdom has no matchMedia; uPlot (the ledger's charts) asks it for the screen's pixel ratio on import.
window.matchMedia ??= ((query: string) => ({
  matches: false,
  media: query,
  onchange: null,
  addListener: () => {},
  removeListener: () => {},
  addEventListener: () => {},
  removeEventListener: () => {},
  dispatchEvent: () => false,
})) as unknown as typeof window.matchMedia;
