// When something was first on screen (epoch ms, `Date.now()` in the animation frame after it rendered),
// kept as a `data-*` attribute: the page's own timing marks, read by the app's benchmark
// (ui/e2e/bench/) and handy in the inspector. Set once per element; nothing else depends on it.
import { useEffect, useState } from "react";

/** The time of the first frame after `ready` became true (undefined until then). */
export function useFirstTime(ready: boolean): number | undefined {
  const [at, setAt] = useState<number>();
  useEffect(() => {
    if (!ready || at !== undefined) return;
    const frame = requestAnimationFrame(() => setAt(Date.now()));
    return () => cancelAnimationFrame(frame);
  }, [ready, at]);
  return at;
}
