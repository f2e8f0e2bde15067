//! Tool-name rules: lower snake case for built-in tools, `mcp:<server>:<tool>` for upstream MCP tools,
//! and `mcp:<server>:<method>` for the MCP methods of an upstream server that pass the pipeline as calls
//! (reading a resource, getting a prompt): those names hold a `/`, which no upstream tool name may.

use thiserror::Error;

/// Longest accepted tool name, in bytes.
pub const MAX_TOOL_NAME_BYTES: usize = 256;
/// Longest accepted upstream server id or upstream tool name, in bytes.
pub const MAX_NAME_PART_BYTES: usize = 128;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum NameError {
    #[error("Invalid tool name {name:?}: {why}")]
    Invalid { name: String, why: &'static str },
}

fn invalid(name: &str, why: &'static str) -> NameError {
    let mut shown: String = name.chars().take(80).collect();
    if shown.len() < name.len() {
        shown.push('…');
    }
    NameError::Invalid { name: shown, why }
}

/// The MCP methods of an upstream server that are dispatched like tool calls (grants, policy, approval,
/// ledger), registered as `mcp:<server>:<method>`. Agents reach them through the methods themselves,
/// never through `tools/list` or `tools/call`.
pub const MCP_METHOD_TOOLS: [&str; 5] =
    [MCP_RESOURCES_READ, MCP_PROMPTS_GET, MCP_SAMPLING, MCP_ELICITATION, MCP_ROOTS];
/// `resources/read`: its argument `uri` is the resource's URI as the upstream server knows it.
pub const MCP_RESOURCES_READ: &str = "resources/read";
/// `prompts/get`: its arguments are `name` and the prompt's `arguments`.
pub const MCP_PROMPTS_GET: &str = "prompts/get";
/// `sampling/createMessage` the server asks of the agent during a call (its params as arguments).
pub const MCP_SAMPLING: &str = "sampling/createMessage";
/// `elicitation/create` the server asks of the agent during a call (its params as arguments).
pub const MCP_ELICITATION: &str = "elicitation/create";
/// `roots/list` the server asks of the agent during a call (the agent's workspace folders).
pub const MCP_ROOTS: &str = "roots/list";

/// The server and method of a method tool's name (`mcp:<server>:resources/read`), if it is one.
pub fn mcp_method_of(name: &str) -> Option<(&str, &'static str)> {
    let (server, tool) = name.strip_prefix("mcp:")?.split_once(':')?;
    MCP_METHOD_TOOLS.iter().find(|m| **m == tool).map(|m| (server, *m))
}

/// Checks a tool name.
///
/// * built-in: `^[a-z][a-z0-9_]*$` (lower snake case), at most 64 bytes;
/// * namespaced: `mcp:<server>:<tool>` with server `[A-Za-z0-9][A-Za-z0-9._-]*` and tool
///   `[A-Za-z0-9_.-]+` (the characters the MCP spec recommends), each at most 128 bytes.
pub fn validate_tool_name(name: &str) -> Result<(), NameError> {
    if name.is_empty() {
        return Err(invalid(name, "empty"));
    }
    if name.len() > MAX_TOOL_NAME_BYTES {
        return Err(invalid(name, "longer than 256 bytes"));
    }
    if let Some(rest) = name.strip_prefix("mcp:") {
        let Some((server, tool)) = rest.split_once(':') else {
            return Err(invalid(name, "namespaced names are mcp:<server>:<tool>"));
        };
        validate_server_id(server).map_err(|why| invalid(name, why))?;
        if MCP_METHOD_TOOLS.contains(&tool) {
            return Ok(());
        }
        if tool.is_empty() || tool.len() > MAX_NAME_PART_BYTES {
            return Err(invalid(name, "upstream tool name must be 1 to 128 bytes"));
        }
        if !tool.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-')) {
            return Err(invalid(name, "upstream tool names use only letters, digits, '_', '.', '-'"));
        }
        return Ok(());
    }
    if name.len() > 64 {
        return Err(invalid(name, "built-in names are at most 64 bytes"));
    }
    let mut bytes = name.bytes();
    if !bytes.next().is_some_and(|b| b.is_ascii_lowercase()) {
        return Err(invalid(name, "must start with a lowercase letter"));
    }
    if !bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_') {
        return Err(invalid(name, "built-in names are lower snake case (a-z, 0-9, '_')"));
    }
    Ok(())
}

/// Checks an upstream server id: `[A-Za-z0-9][A-Za-z0-9._-]*`, at most 128 bytes.
pub fn validate_server_id(server: &str) -> Result<(), &'static str> {
    if server.is_empty() || server.len() > MAX_NAME_PART_BYTES {
        return Err("server id must be 1 to 128 bytes");
    }
    let mut bytes = server.bytes();
    if !bytes.next().is_some_and(|b| b.is_ascii_alphanumeric()) {
        return Err("server id must start with a letter or digit");
    }
    if !bytes.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-')) {
        return Err("server ids use only letters, digits, '.', '_', '-'");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_snake_case_and_namespaced() {
        for ok in
            ["shell", "read", "search_tools", "a1_b2", "mcp:fs:read_file", "mcp:git-1.x:get-log", "mcp:A:B.c"]
        {
            assert!(validate_tool_name(ok).is_ok(), "{ok}");
        }
    }

    #[test]
    fn rejects_everything_else() {
        for bad in [
            "",
            "Shell",
            "1shell",
            "_x",
            "shell-x",
            "she ll",
            "mcp:",
            "mcp:fs",
            "mcp::x",
            "mcp:-fs:x",
            "mcp:fs:",
            "mcp:fs:a b",
            "mcp:fs:a:b",
            "mcp:f/s:x",
            "mcp:fs:resources/list",
            "mcp:fs:tools/call",
            "mcp:fs:/",
            "über",
            "a\u{0}",
        ] {
            assert!(validate_tool_name(bad).is_err(), "{bad:?}");
        }
        assert!(validate_tool_name(&"a".repeat(64)).is_ok());
        assert!(validate_tool_name("mcp:fs:resources/read").is_ok());
        assert!(validate_tool_name("mcp:fs:prompts/get").is_ok());
        assert_eq!(mcp_method_of("mcp:fs:prompts/get"), Some(("fs", MCP_PROMPTS_GET)));
        assert_eq!(mcp_method_of("mcp:fs:read_file"), None);
        assert_eq!(mcp_method_of("prompts/get"), None);
        assert!(validate_tool_name(&"a".repeat(65)).is_err());
        assert!(validate_tool_name(&format!("mcp:s:{}", "x".repeat(128))).is_ok());
        assert!(validate_tool_name(&format!("mcp:s:{}", "x".repeat(129))).is_err());
    }
}
