// Stands in for smtp-address-parser, which json-schema-library (under codemirror-json-schema) imports to
// check the `idn-email` format. That parser (nearley) assigns `prototype.toString` when it loads, which
// throws in the app's window: Tauri freezes the built-in prototypes there (`freezePrototype`, kept on
// against prototype pollution). The policy schema has no e-mail field, so the format is never checked.
export function parse(): never {
  throw new Error("the idn-email format is not checked in this window");
}
