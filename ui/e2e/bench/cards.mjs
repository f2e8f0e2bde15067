// What the app's and the browser console's benches measure alike: a prompted call asked at the gateway
// (the approval's `requested_at`) to its card painted (the card's `data-shown-at`), for every card an
// agent's calls bring, each card then denied through the operator HTTP API so the next one comes.
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Milliseconds from asked to painted for `count` cards shown in `browser` by the hub at `base` (its
 * `http://HOST:PORT`), answered with `operatorToken`; `calls` is the agent's run that asks them. */
export async function callToCard(browser, { base, operatorToken, count, calls }) {
  const http = async (method, path, body) => {
    const r = await fetch(`${base}${path}`, {
      method,
      headers: { Authorization: `Bearer ${operatorToken}`, "Content-Type": "application/json" },
      body: body && JSON.stringify(body),
    });
    return r.json().catch(() => null);
  };
  const latencies = [];
  const seen = new Set();
  while (latencies.length < count) {
    const cards = await browser.execute(() =>
      [...globalThis.document.querySelectorAll('[data-testid="approval-card"][data-shown-at]')].map((c) => [
        Number(c.getAttribute("data-approval-id")),
        Number(c.getAttribute("data-shown-at")),
      ]),
    );
    const fresh = cards.filter(([id]) => !seen.has(id));
    if (fresh.length === 0) {
      await sleep(5);
      continue;
    }
    const { approvals } = await http("GET", "/v1/approvals");
    for (const [id, shownAt] of fresh) {
      const approval = approvals.find((a) => a.id === id);
      if (!approval) continue;
      seen.add(id);
      latencies.push(shownAt - approval.requested_at / 1000);
      await http("POST", `/v1/approvals/${id}`, { answer: "deny", arguments_sha256: approval.arguments_sha256 });
    }
  }
  const { code } = await calls;
  return { latencies, agentExit: code };
}
