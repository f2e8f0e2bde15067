// Tooltip and lint text as DOM text nodes only. Schema messages quote values with `backticks`; those
// quotes may hold text from the policy document (an agent may have written it), so nothing here is ever
// parsed as HTML or Markdown: backtick spans become <code> elements whose content is set as text.

/** A <div class> whose children are `text` split into text nodes and <code> spans at backticks. */
export function plainText(text: string, className?: string): HTMLElement {
  const root = document.createElement("div");
  if (className) root.className = className;
  const parts = text.split("`");
  // An odd number of backticks leaves the last one unpaired: keep it as text.
  const paired = parts.length % 2 === 1 ? parts : [...parts.slice(0, -2), `${parts.at(-2) ?? ""}\`${parts.at(-1) ?? ""}`];
  paired.forEach((part, index) => {
    if (part === "") return;
    if (index % 2 === 1) {
      const code = document.createElement("code");
      code.textContent = part;
      root.append(code);
    } else root.append(document.createTextNode(part));
  });
  return root;
}
