// Calls over time, stacked by outcome (finished, error, blocked, interrupted) with the prompted ones
// as a line, drawn by uPlot. Dragging across the chart narrows the view to that time range.
import { useEffect, useRef } from "react";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import type { Bucket } from "../../../backend/backend";

/** Most buckets drawn with their empty neighbours filled in. */
const MAX_FILLED = 5000;

export const OUTCOMES = [
  { key: "finished", label: "finished", color: "--allow" },
  { key: "error", label: "error", color: "--error" },
  { key: "blocked", label: "blocked", color: "--forbidden" },
  { key: "interrupted", label: "interrupted", color: "--muted" },
] as const;

/** The buckets with the empty ones between them filled in (when not too many). */
export function filled(buckets: Bucket[], width: number): Bucket[] {
  const first = buckets[0];
  const last = buckets[buckets.length - 1];
  if (!first || !last || width <= 0) return buckets;
  const n = Math.floor((last.start - first.start) / width) + 1;
  if (n > MAX_FILLED) return buckets;
  const byStart = new Map(buckets.map((b) => [b.start, b]));
  const out: Bucket[] = [];
  for (let i = 0; i < n; i++) {
    const start = first.start + i * width;
    out.push(byStart.get(start) ?? { start, count: 0, finished: 0, error: 0, blocked: 0, interrupted: 0, prompted: 0 });
  }
  return out;
}

const cssColor = (name: string) => getComputedStyle(document.documentElement).getPropertyValue(name).trim() || "#888";

export function TimeChart({
  buckets,
  bucketUs,
  onRange,
}: {
  buckets: Bucket[];
  bucketUs: number;
  onRange: (sinceUs: number, untilUs: number) => void;
}) {
  const box = useRef<HTMLDivElement>(null);
  const onRangeRef = useRef(onRange);
  useEffect(() => {
    onRangeRef.current = onRange;
  }, [onRange]);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const data = filled(buckets, bucketUs);
    const xs = data.map((b) => b.start / 1e6);
    const stacked: number[][] = [];
    let running = data.map(() => 0);
    for (const o of OUTCOMES) {
      running = running.map((v, i) => v + (data[i]?.[o.key] ?? 0));
      stacked.push(running);
    }
    const bars = uPlot.paths.bars?.({ size: [0.9, 40], gap: 1 });
    const series: uPlot.Series[] = [{}];
    // Drawn top of the stack first, each lower part over it.
    for (let i = OUTCOMES.length - 1; i >= 0; i--) {
      const o = OUTCOMES[i];
      if (!o) continue;
      const color = cssColor(o.color);
      series.push({ label: o.label, stroke: color, fill: color, paths: bars, points: { show: false } });
    }
    series.push({ label: "prompted", stroke: cssColor("--prompt"), width: 2, points: { show: false } });
    const values = [xs, ...[...stacked].reverse(), data.map((b) => b.prompted)];
    const muted = cssColor("--muted");
    const plot = new uPlot(
      {
        width: el.clientWidth || 800,
        height: 220,
        series,
        legend: { show: false },
        cursor: { drag: { x: true, y: false } },
        axes: [
          { stroke: muted, grid: { stroke: "rgba(127,127,127,0.15)" } },
          { stroke: muted, grid: { stroke: "rgba(127,127,127,0.15)" }, size: 60 },
        ],
        hooks: {
          setSelect: [
            (u) => {
              if (u.select.width < 4) return;
              const from = u.posToVal(u.select.left, "x");
              const to = u.posToVal(u.select.left + u.select.width, "x");
              u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
              onRangeRef.current(Math.floor(from * 1e6), Math.ceil(to * 1e6));
            },
          ],
        },
      },
      values as uPlot.AlignedData,
      el,
    );
    const resize = new ResizeObserver(() => plot.setSize({ width: el.clientWidth || 800, height: 220 }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [buckets, bucketUs]);
  return (
    <figure className="time-chart" data-testid="time-chart">
      <div ref={box} />
      <figcaption className="chart-legend">
        {OUTCOMES.map((o) => (
          <span key={o.key} className={`legend-item legend-${o.key}`}>
            ■ {o.label}
          </span>
        ))}
        <span className="legend-item legend-prompted">— prompted</span>
        <span className="muted"> · drag across the chart to narrow the time range</span>
      </figcaption>
    </figure>
  );
}
