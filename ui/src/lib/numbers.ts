// Numbers and dates as the operator's locale writes them — or, when the window's locale is not a
// valid language tag (WebKit under `LANG=C` reports "C", and Intl.NumberFormat then throws), as en-US.

function usableLocale(): string {
  try {
    new Intl.NumberFormat(navigator.language).format(1);
    return navigator.language;
  } catch {
    return "en-US";
  }
}

export const LOCALE = usableLocale();

/** `1,000,000`. */
export const count = (n: number): string => n.toLocaleString(LOCALE);

/** The local date and time of milliseconds since the epoch. */
export const dateTime = (ms: number): string => new Date(ms).toLocaleString(LOCALE);
export const timeOfDay = (ms: number): string => new Date(ms).toLocaleTimeString(LOCALE);
export const dateOnly = (ms: number): string => new Date(ms).toLocaleDateString(LOCALE);

/** `812 B`, `1.6 kB`, `24 MB` (powers of 1000, one decimal under ten). */
export function byteSize(n: number): string {
  const units = ["B", "kB", "MB", "GB", "TB"];
  let value = n;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit += 1;
  }
  const digits = unit > 0 && value < 10 ? 1 : 0;
  return `${value.toLocaleString(LOCALE, { maximumFractionDigits: digits, minimumFractionDigits: digits })} ${units[unit]}`;
}
