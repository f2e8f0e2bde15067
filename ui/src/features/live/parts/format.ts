// Times of the live view in the words an operator reads at a glance: a step's offset from the call's
// start and a duration, both from hub microseconds, in a fixed width (tabular figures in the CSS).

/** `+0.3 ms`, `+12 ms`, `+1.24 s`. */
export function offset(us: number): string {
  return `+${inMillis(Math.max(0, us))}`;
}

/** A duration, below a millisecond in µs: `14 µs`, `2.1 ms`, `12 ms`, `1.24 s`. */
export function span(us: number): string {
  return us < 1000 ? `${Math.round(us)} µs` : inMillis(us);
}

/** `0.3 ms`, `12 ms`, `1.24 s`, `2m 05s`. */
function inMillis(us: number): string {
  const ms = us / 1000;
  if (ms < 10) return `${ms.toFixed(1)} ms`;
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(2)} s`;
  return `${Math.floor(s / 60)}m ${String(Math.floor(s % 60)).padStart(2, "0")}s`;
}

/** `14:03:07.412`, the local time of a hub timestamp. */
export function clockTime(us: number): string {
  const d = new Date(Math.floor(us / 1000));
  const two = (n: number) => String(n).padStart(2, "0");
  return `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}.${String(d.getMilliseconds()).padStart(3, "0")}`;
}
