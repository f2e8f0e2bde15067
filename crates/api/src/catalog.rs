//! The tool catalog through the operator API: every registered tool as agents see it (wire name, schema,
//! annotations) and whether the grants in force let them.

use super::OperatorApi;
use super::types::CatalogTool;
use portcullis_mcp::wire::WireNames;

impl OperatorApi {
    /// Every registered tool, in registry order.
    pub fn tools(&self) -> Vec<CatalogTool> {
        let registry = self.hub.dispatcher().registry();
        let names = WireNames::new(registry.names());
        let grants = self.hub.grants();
        registry
            .specs()
            .map(|spec| CatalogTool {
                name: spec.name.clone(),
                wire_name: names.wire_name(&spec.name).unwrap_or(&spec.name).to_owned(),
                description: spec.description.clone(),
                parameters: spec.parameters.clone(),
                annotations: serde_json::to_value(&spec.annotations).unwrap_or_default(),
                granted: grants.permits(&spec.name),
            })
            .collect()
    }
}
