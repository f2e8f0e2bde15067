//! Tool names as agents see them. Common clients accept only letters, digits, `_` and `-`, at most 64
//! characters; the registry names upstream tools `mcp:<server>:<tool>`. The mapping is reversible: a
//! table from wire names back to registry names, built for each registry version.

use std::collections::HashMap;

/// Longest wire name common clients accept.
pub const MAX_WIRE_NAME: usize = 64;

/// Whether `name` is valid on the wire as is.
pub fn is_wire_safe(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_WIRE_NAME
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// FNV-1a, 32 bits: a short stable suffix that tells apart names which map to the same text.
fn fnv32(text: &str) -> u32 {
    let mut hash: u32 = 0x811c_9dc5;
    for byte in text.bytes() {
        hash ^= u32::from(byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    hash
}

/// The wire name of a registry name: itself when safe; `mcp:<server>:<tool>` becomes `<server>__<tool>`;
/// other characters become `_`; a name that had to change and is too long is cut and given a hash suffix.
pub fn wire_name(registry_name: &str) -> String {
    if is_wire_safe(registry_name) {
        return registry_name.to_owned();
    }
    let base = match registry_name.strip_prefix("mcp:").and_then(|rest| rest.split_once(':')) {
        Some((server, tool)) => format!("{server}__{tool}"),
        None => registry_name.to_owned(),
    };
    let cleaned: String = base
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' })
        .collect();
    if is_wire_safe(&cleaned) && cleaned == base {
        return cleaned;
    }
    hashed(&cleaned, registry_name)
}

fn hashed(cleaned: &str, registry_name: &str) -> String {
    let suffix = format!("_{:08x}", fnv32(registry_name));
    let keep = MAX_WIRE_NAME - suffix.len();
    let mut cut: String = cleaned.chars().take(keep).collect();
    if cut.is_empty() {
        cut.push('t');
    }
    cut + &suffix
}

/// The two-way table of one registry version.
#[derive(Debug, Clone, Default)]
pub struct WireNames {
    to_registry: HashMap<String, String>,
    to_wire: HashMap<String, String>,
}

impl WireNames {
    /// Builds the table; when two registry names map to the same wire name, the later one gets a hash
    /// suffix (hashed again, with a round number, while that is taken too: another name may be exactly
    /// that suffixed name), so every wire name stands for exactly one tool.
    pub fn new<'a>(registry_names: impl IntoIterator<Item = &'a str>) -> Self {
        let mut table = WireNames::default();
        for name in registry_names {
            let plain = wire_name(name);
            let mut wire = plain.clone();
            let mut round = 0u32;
            while table.to_registry.contains_key(&wire) {
                round += 1;
                wire = if round == 1 {
                    hashed(&plain, name)
                } else {
                    hashed(&plain, &format!("{name}#{round}"))
                };
            }
            table.to_registry.insert(wire.clone(), name.to_owned());
            table.to_wire.insert(name.to_owned(), wire);
        }
        table
    }

    /// The table of single-upstream mode: the tools of `server` under their own names (the names the
    /// server listed), and no other tool.
    pub fn single<'a>(server: &str, registry_names: impl IntoIterator<Item = &'a str>) -> Self {
        let mut table = WireNames::default();
        let prefix = format!("mcp:{server}:");
        for name in registry_names {
            let Some(own) = name.strip_prefix(&prefix) else { continue };
            table.to_registry.insert(own.to_owned(), name.to_owned());
            table.to_wire.insert(name.to_owned(), own.to_owned());
        }
        table
    }

    pub fn registry_name(&self, wire: &str) -> Option<&str> {
        self.to_registry.get(wire).map(String::as_str)
    }

    pub fn wire_name(&self, registry_name: &str) -> Option<&str> {
        self.to_wire.get(registry_name).map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn safe_names_stay_and_upstream_names_are_namespaced() {
        assert_eq!(wire_name("shell"), "shell");
        assert_eq!(wire_name("mcp:everything:get-sum"), "everything__get-sum");
        assert_eq!(wire_name("mcp:srv.v2:do it"), format!("srv_v2__do_it_{:08x}", fnv32("mcp:srv.v2:do it")));
    }

    #[test]
    fn single_upstream_names_are_the_servers_own_and_nothing_else() {
        let table = WireNames::single("up", ["shell", "mcp:up:echo.v2", "mcp:other:echo", "mcp:up:x"]);
        assert_eq!(table.wire_name("mcp:up:echo.v2"), Some("echo.v2"));
        assert_eq!(table.registry_name("x"), Some("mcp:up:x"));
        assert_eq!(table.wire_name("shell"), None);
        assert_eq!(table.registry_name("shell"), None);
        assert_eq!(table.wire_name("mcp:other:echo"), None);
    }

    #[test]
    fn long_names_are_cut_with_a_hash_and_stay_distinct() {
        let a = format!("mcp:server:{}", "x".repeat(100));
        let b = format!("mcp:server:{}y", "x".repeat(100));
        let (wa, wb) = (wire_name(&a), wire_name(&b));
        assert!(is_wire_safe(&wa) && is_wire_safe(&wb));
        assert_eq!(wa.len(), MAX_WIRE_NAME);
        assert_ne!(wa, wb);
    }

    #[test]
    fn a_suffixed_name_taken_by_another_tool_is_hashed_again() {
        // "mcp:s:a.b" is `s__a_b_<h>`; both that and its second suffix `s__a_b_<h>_<h>` are other tools.
        let h = format!("{:08x}", fnv32("mcp:s:a.b"));
        let (first, second) = (format!("mcp:s:a_b_{h}_{h}"), format!("mcp:s:a_b_{h}"));
        let names = [first.as_str(), second.as_str(), "mcp:s:a.b"];
        let table = WireNames::new(names);
        for name in names {
            assert_eq!(table.registry_name(table.wire_name(name).unwrap()), Some(name));
        }
    }

    #[test]
    fn the_table_is_reversible_even_on_collisions() {
        let names = ["mcp:a:b_c", "mcp:a_b:c", "a__b_c", "shell"];
        let table = WireNames::new(names);
        let mut wires = std::collections::HashSet::new();
        for name in names {
            let wire = table.wire_name(name).unwrap();
            assert!(is_wire_safe(wire), "{wire}");
            assert!(wires.insert(wire.to_owned()), "duplicate wire name {wire}");
            assert_eq!(table.registry_name(wire), Some(name));
        }
    }
}
