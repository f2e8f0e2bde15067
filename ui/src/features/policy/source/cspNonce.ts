// The nonce the window's Content Security Policy accepts for <style> elements. The app's CSP allows
// styles from its own files only; Tauri stamps a nonce on the inline <style> of index.html at build time
// and adds it to style-src. CodeMirror inserts its styles at runtime: under this nonce they load; without
// it the editor shows line numbers and no text. `nonce` is read as the property (the attribute is
// hidden once the page has loaded); in tests and the plain browser there is none and nothing is needed.
export function cspNonce(): string | undefined {
  const carrier = document.getElementById("csp-nonce-carrier");
  const nonce = carrier instanceof HTMLElement ? carrier.nonce : undefined;
  return nonce ? nonce : undefined;
}
