// A key as shown on buttons and in the key list.
export function Kbd({ children }: { children: string }) {
  return <kbd className="kbd">{children}</kbd>;
}
