// A value once it has stopped changing for `ms`: what slower checks (tests, lint) run on while typing.
import { useEffect, useState } from "react";

export function useSettled<T>(value: T, ms: number): T {
  const [settled, setSettled] = useState(value);
  useEffect(() => {
    const timer = setTimeout(() => setSettled(value), ms);
    return () => clearTimeout(timer);
  }, [value, ms]);
  return settled;
}
