// The policy JSON Schema the editor completes, explains and checks against: the committed file generated
// from the Rust types (tool-manifests/schemas/policy.schema.json), bundled into the window at build time.
import schema from "../../../../../tool-manifests/schemas/policy.schema.json";

export const policySchema: object = schema;
