// The ledger browser in the window (docs/benchmarks.md, "The ledger browser"): the real app under
// tauri-driver + WebKitWebDriver in Xvfb opens BENCH_LEDGER (e.g. `ledger_fixture /tmp/big.ledger
// 1000000`) and the page itself times, from the moment the view is asked for (the URL's hash set) to
// the frame that shows it: the first rows after opening the file, a search's first marked rows, the
// stats tiles; then it scrolls the calls table from top to bottom a fixed number of rows per frame
// and counts, each frame, the rows of the viewport that were not drawn yet (blank). Prints JSON; never
// asserts. Usage:
//   PORTCULLIS_APP_BIN=target/release/portcullis-app BENCH_LEDGER=/tmp/big.ledger \
//     xvfb-run -a -s "-screen 0 1280x900x24" node ui/e2e/bench/ledger.bench.mjs [rows-per-frame ...]
import { freePort, hubInfo, startApp, world } from "../harness.mjs";

const LEDGER = process.env.BENCH_LEDGER ?? "/tmp/big.ledger";
const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const SPEEDS = process.argv.slice(2).map(Number).filter((n) => n > 0);
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

/** Scrolls the calls table `step` rows a frame to the end (or `limit` rows); blank rows per frame. */
function scrollAll(browser, step, limit) {
  return browser.executeAsync(
    (step, limit, done) => {
      const el = globalThis.document.querySelector('[data-testid="calls-scroll"]');
      const ROW = 28;
      let frames = 0;
      let blankFrames = 0;
      let blankRows = 0;
      let travelled = 0;
      let last = performance.now();
      let worstGap = 0;
      const t0 = last;
      const tick = (t) => {
        worstGap = Math.max(worstGap, t - last);
        last = t;
        frames++;
        // What the viewport shows: rows drawn in it, against rows it holds room for.
        const top = el.scrollTop;
        const view = el.getBoundingClientRect();
        const drawn = [...el.querySelectorAll('[data-testid="call-row"]')].filter((r) => {
          const b = r.getBoundingClientRect();
          return b.bottom > view.top + 30 && b.top < view.bottom;
        }).length;
        const room = Math.floor((view.height - 30) / ROW);
        const blank = Math.max(0, room - drawn);
        const atEnd = top + el.clientHeight >= el.scrollHeight - 2 && !el.querySelector(".calls-more");
        if (blank > 0 && !atEnd) {
          blankFrames++;
          blankRows += blank;
        }
        if (atEnd || travelled >= limit) {
          done({ frames, blank_frames: blankFrames, blank_rows: blankRows, rows_scrolled: travelled, seconds: (t - t0) / 1000, worst_frame_gap_ms: worstGap });
          return;
        }
        el.scrollTop = top + step * ROW;
        travelled += Math.round((el.scrollTop - top) / ROW) > 0 ? step : 0;
        globalThis.requestAnimationFrame(tick);
      };
      globalThis.requestAnimationFrame(tick);
    },
    step,
    limit,
  );
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
  await timeView(browser, `#ledger?file=${file}`, '[data-testid="call-row"]');
  const scrolls = [];
  for (const step of SPEEDS.length ? SPEEDS : [40, 200]) {
    await browser.execute(() => {
      globalThis.document.querySelector('[data-testid="calls-scroll"]').scrollTop = 0;
    });
    scrolls.push({ rows_per_frame: step, ...(await scrollAll(browser, step, 1_000_000)) });
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
