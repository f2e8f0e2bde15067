import { describe, expect, it } from "vitest";
import { render, screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { ConnectionsView } from "./ConnectionsView";
import { BackendContext } from "../../app/context";
import { fakeBackend } from "../../backend/fake";
import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import type { UpstreamServer } from "../../backend/backend";

const server: UpstreamServer = {
  id: "github",
  state: "failed",
  error: "the server exited (status 1)",
  failures: 2,
  retry_in_ms: 4000,
  since: 1_767_000_000_000_000,
  tools: 3,
  restarts: 2,
  last_error: { message: "the server exited (status 1)", at: 1_767_000_000_000_000 },
  stderr_tail: ["listening on stdio", "fatal: token \u001b[31mexpired\u001b[0m"],
};

function renderWith(servers: UpstreamServer[]) {
  const backend = fakeBackend({
    sessions: async () => [],
    servers: async () => servers,
    tools: async () => [],
    restartServer: async () => {},
  });
  render(
    <QueryClientProvider client={new QueryClient()}>
      <BackendContext.Provider value={backend}>
        <ConnectionsView />
      </BackendContext.Provider>
    </QueryClientProvider>,
  );
  return backend;
}

describe("the connections view", () => {
  it("shows a server's last stderr lines with control characters made visible, and restarts it", async () => {
    const backend = renderWith([server]);
    const row = (await screen.findByText("github")).closest("tr") as HTMLElement;
    expect(row).toHaveTextContent("failed");
    const tail = within(row).getByTestId("stderr-tail");
    expect(tail).toHaveTextContent("last 2 stderr lines");
    const text = tail.querySelector("pre")?.textContent ?? "";
    expect(text).toContain("listening on stdio");
    expect(text).not.toContain("\u001b");
    expect(text).toContain("expired");
    await userEvent.click(within(row).getByRole("button", { name: "Restart" }));
    expect(backend.calls).toContainEqual(["restartServer", ["github"]]);
  });

  it("shows no stderr section for a server that wrote none", async () => {
    renderWith([{ ...server, stderr_tail: [] }]);
    const row = (await screen.findByText("github")).closest("tr") as HTMLElement;
    expect(within(row).queryByTestId("stderr-tail")).toBeNull();
  });
});
