// An input whose value lives in the policy text: what the operator types is kept here while they type
// (each keystroke still becomes an edit of the text), and the text's value is taken again only once it
// differs from what this field last wrote (an undo, a source edit). A controlled input fed back from the
// text lost characters typed faster than a render in WebKit; this one never fights the keyboard.
import { useState, type InputHTMLAttributes } from "react";

type Props = Omit<InputHTMLAttributes<HTMLInputElement>, "value" | "onChange"> & {
  value: string;
  onValue(value: string): void;
};

export function TextField({ value, onValue, ...rest }: Props) {
  const [typed, setTyped] = useState<{ shown: string; wrote: string | null }>({ shown: value, wrote: null });
  // The text changed by other means (undo, the source editor): show it.
  if (value !== typed.shown && value !== typed.wrote) setTyped({ shown: value, wrote: null });
  return (
    <input
      {...rest}
      value={typed.shown}
      onChange={(e) => {
        const next = e.target.value;
        setTyped({ shown: next, wrote: next });
        onValue(next);
      }}
    />
  );
}
