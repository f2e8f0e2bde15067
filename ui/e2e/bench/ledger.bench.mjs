// The ledger browser in the window (docs/benchmarks.md, "The ledger browser"): the real app under
// tauri-driver + WebKitWebDriver in Xvfb opens BENCH_LEDGER (e.g. `ledger_fixture /tmp/big.ledger
// 1000000`) and the page itself times, from the moment the view is asked for (the URL's hash set) to
// the frame that shows it: the first rows after opening the file, a search's first marked rows, the
// stats tiles; then it scrolls the calls table from top to bottom a fixed number of rows per frame
// and counts, each frame, the rows of the viewport that were not drawn yet (blank). Prints JSON; never
// asserts. Usage:
//   PORTCULLIS_APP_BIN=target/release/portcullis-app BENCH_LEDGER=/tmp/big.ledger \
//     xvfb-run -a -s "-screen 0 1280x900x24" node ui/e2e/bench/ledger.bench.mjs [rows-per-frame:rows ...]
import { freePort, hubInfo, startApp, world } from "../harness.mjs";

const LEDGER = process.env.BENCH_LEDGER ?? "/tmp/big.ledger";
const RUNS = Number(process.env.BENCH_RUNS ?? 5);
// Scrolls as `rows-per-frame:rows` (default: a fast wheel over 100,000 rows, a dragged thumb over all).
const SPEEDS = (process.argv.slice(2).length ? process.argv.slice(2) : ["40:100000", "400:1000000"]).map((a) => {
  const [step, limit] = a.split(":").map(Number);
  return { step, limit: limit || 1_000_000 };
});
const POLICY = `{ "commands": { "default": "prompt", "rules": [] } }\n`;

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Sets the hash in the page and resolves with the ms until `selector` (and `test` of it) shows. */
function timeView(browser, hash, selector, test = null) {
  return browser.executeAsync(
    (hash, selector, test, done) => {
      const t0 = performance.now();
      globalThis.location.hash = hash;
      const check = () => {
        const el = globalThis.document.querySelector(selector);
        if (el && (!test || el.textContent.includes(test))) done(performance.now() - t0);
        else if (performance.now() - t0 > 60_000) done(-1);
        else globalThis.requestAnimationFrame(check);
      };
      globalThis.requestAnimationFrame(check);
    },
    hash,
    selector,
    test,
  );
}

/** Scrolls the calls table `step` rows a frame for up to 20 s (a WebDriver call must end well within
 * its timeout), from where it is; what the frames saw. */
function scrollFor(browser, step, limit) {
  return browser.executeAsync(
    (step, limit, done) => {
      const el = globalThis.document.querySelector('[data-testid="calls-scroll"]');
      const ROW = 28;
      const seen = { frames: 0, blank_frames: 0, blank_rows: 0, rows_scrolled: 0, worst_frame_gap_ms: 0, ended: false };
      let last = performance.now();
      const t0 = last;
      const tick = (t) => {
        seen.worst_frame_gap_ms = Math.max(seen.worst_frame_gap_ms, t - last);
        last = t;
        seen.frames++;
        // What the viewport shows: rows drawn in it, against rows it holds room for.
        const top = el.scrollTop;
        const view = el.getBoundingClientRect();
        const drawn = [...el.querySelectorAll('[data-testid="call-row"]')].filter((r) => {
          const b = r.getBoundingClientRect();
          return b.bottom > view.top + 30 && b.top < view.bottom;
        }).length;
        const room = Math.floor((view.height - 30) / ROW);
        const blank = Math.max(0, room - drawn);
        seen.ended = top + el.clientHeight >= el.scrollHeight - 2 && !el.querySelector(".calls-more");
        if (blank > 0 && !seen.ended) {
          seen.blank_frames++;
          seen.blank_rows += blank;
        }
        if (seen.ended || seen.rows_scrolled >= limit || t - t0 > 20_000) {
          done(seen);
          return;
        }
        el.scrollTop = top + step * ROW;
        seen.rows_scrolled += Math.max(0, Math.round((el.scrollTop - top) / ROW));
        globalThis.requestAnimationFrame(tick);
      };
      globalThis.requestAnimationFrame(tick);
    },
    step,
    limit,
  );
}

/** Scrolls `limit` rows (or to the end), `step` rows a frame; the sum of what the frames saw. */
async function scrollAll(browser, step, limit) {
  const total = { frames: 0, blank_frames: 0, blank_rows: 0, rows_scrolled: 0, worst_frame_gap_ms: 0, seconds: 0 };
  const started = Date.now();
  for (;;) {
    const seen = await scrollFor(browser, step, limit - total.rows_scrolled);
    for (const k of ["frames", "blank_frames", "blank_rows", "rows_scrolled"]) total[k] += seen[k];
    total.worst_frame_gap_ms = Math.max(total.worst_frame_gap_ms, seen.worst_frame_gap_ms);
    if (seen.ended || total.rows_scrolled >= limit) break;
    if (seen.rows_scrolled === 0) {
      // 20 s without a row scrolled: the table stopped loading (reported, not waited on forever).
      total.stuck = true;
      break;
    }
  }
  total.seconds = (Date.now() - started) / 1000;
  return total;
}

const w = world(POLICY);
const app = await startApp(w, await freePort());
try {
  await hubInfo(w);
  const { browser } = app;
  await browser.setTimeout({ script: 900_000 });
  await browser.$('[data-testid="nav-ledger"]').click();
  await browser.$('[data-testid="ledger-view"]').waitForDisplayed({ timeout: 30_000 });
  const file = encodeURIComponent(LEDGER);
  const open = [];
  const search = [];
  const rare = [];
  const stats = [];
  for (let i = 0; i < RUNS; i++) {
    await timeView(browser, "#ledger", '[data-testid="ledger-name"]', "hub's ledger");
    open.push(await timeView(browser, `#ledger?file=${file}&r=${i}`, '[data-testid="call-row"]'));
    search.push(await timeView(browser, `#ledger?file=${file}&q=kubectl&r=${i}`, '[data-testid="call-row"] mark'));
    rare.push(await timeView(browser, `#ledger?file=${file}&q=feature&tool=shell&r=${i}`, '[data-testid="call-row"] mark'));
    stats.push(await timeView(browser, `#ledger?file=${file}&tab=stats&r=${i}`, '[data-testid="stat-total"]'));
  }
  const statsRust = await browser.$('[data-testid="stats-source"]').getText();
  console.log(JSON.stringify({ first_rows_ms: open, search_common_ms: search, search_rare_ms: rare, stats_ms: stats, statsRust }));
  const scrolls = [];
  for (const { step, limit } of SPEEDS) {
    await timeView(browser, "#ledger", '[data-testid="ledger-name"]', "hub's ledger");
    await timeView(browser, `#ledger?file=${file}`, '[data-testid="call-row"]');
    scrolls.push({ rows_per_frame: step, ...(await scrollAll(browser, step, limit)) });
    console.log(JSON.stringify(scrolls[scrolls.length - 1]));
  }
  console.log(
    JSON.stringify({
      bench: "ledger_in_window",
      ledger: LEDGER,
      runs: RUNS,
      first_rows_ms: { median: median(open), all: open },
      search_common_ms: { median: median(search), all: search },
      search_rare_ms: { median: median(rare), all: rare },
      stats_ms: { median: median(stats), all: stats },
      stats_panel_says: statsRust,
      scrolls,
    }),
  );
} finally {
  await app.stop();
}
