// Times as the hub sends them (microseconds since the Unix epoch) in the words an operator reads.

/** Milliseconds since the epoch of a hub timestamp. */
export const millis = (micros: number): number => Math.floor(micros / 1000);

/** `1:05` for 65 seconds; `0:00` once past. */
export function clock(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}`;
}

/** The absolute local time, for hover titles. */
export const absolute = (micros: number): string => new Date(millis(micros)).toLocaleString();

/** `12s ago`, `3m ago`, `2h ago`. */
export function ago(micros: number, now: number): string {
  const s = Math.max(0, Math.round((now - millis(micros)) / 1000));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  return `${Math.floor(s / 3600)}h ago`;
}
