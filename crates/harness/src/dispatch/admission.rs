//! The checks before execution: lookup, grants and the arguments' shape (stage 3), permission (stage 4)
//! and validation, JSON Schema then host validators (stage 5). Each failure is a [`Refusal`].

use super::guards::sanitize_ident;
use super::{Refusal, Shared, panic_message, shown_name};
use crate::call::{BlockedReason, CallArguments, CallContext, DecidedBy, RunContext, ToolCall};
use crate::error_code::CallErrorCode;
use crate::permission::Permission;
use crate::registry::{RegisteredTool, ToolRegistry};
use crate::schema::truncate;
use crate::validation::ValidatorVerdict;
use serde_json::Value;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

impl Shared {
    /// Stage 3: the tool must exist and be granted, the arguments must be a JSON object. A name that a
    /// grant denies stays denied even if middleware renamed it to something else.
    #[allow(clippy::type_complexity)] // the refusal travels with the name and arguments it concerns
    pub(super) fn admit<'r>(
        &self,
        registry: &'r ToolRegistry,
        requested_name: Option<&str>,
        call: ToolCall,
        run: &RunContext,
    ) -> Result<(&'r RegisteredTool, Value), Box<(Arc<str>, Refusal, Option<Value>)>> {
        let ToolCall { name, arguments, .. } = call;
        // A refused call's arguments go to its record as they are (moved, not copied).
        let args_for_record = |arguments: CallArguments| match arguments {
            CallArguments::Json(v) => Some(v),
            CallArguments::Unparsed { raw, .. } => Some(Value::String(raw)),
        };
        if let Some(requested) = requested_name.filter(|r| *r != name)
            && let Some(scope) = run.grants.denying_scope(requested)
        {
            let refusal = Refusal::new(
                BlockedReason::ToolDenied,
                CallErrorCode::ToolDenied,
                format!(
                    "Tool {requested} is denied by grant scope {} (renamed to {name} by middleware)",
                    scope.name
                ),
                DecidedBy::Grants { scope: scope.name.clone() },
            );
            return Err(Box::new((shown_name(&name), refusal, args_for_record(arguments))));
        }
        let Some(entry) = registry.get(&name) else {
            let refusal = Refusal::new(
                BlockedReason::UnknownTool,
                CallErrorCode::UnknownTool,
                format!("Unknown tool: {name}"),
                DecidedBy::Registry,
            );
            let args = args_for_record(arguments);
            return Err(Box::new((shown_name(&name), refusal, args)));
        };
        if let Some(scope) = run.grants.refusing_scope(&name) {
            let refusal = Refusal::new(
                BlockedReason::ToolDenied,
                CallErrorCode::ToolDenied,
                format!("Tool {name} is not granted (grant scope {})", scope.name),
                DecidedBy::Grants { scope: scope.name.clone() },
            );
            return Err(Box::new((entry.name.clone(), refusal, args_for_record(arguments))));
        }
        match arguments {
            CallArguments::Json(Value::Object(map)) => Ok((entry, Value::Object(map))),
            CallArguments::Json(other) => {
                let refusal = Refusal::new(
                    BlockedReason::InvalidArguments,
                    CallErrorCode::InvalidArguments,
                    format!("Arguments must be a JSON object, got {}", json_type(&other)),
                    DecidedBy::Validator { validator: "arguments".into() },
                );
                Err(Box::new((entry.name.clone(), refusal, Some(other))))
            }
            CallArguments::Unparsed { raw, error } => {
                let refusal = Refusal::new(
                    BlockedReason::InvalidArguments,
                    CallErrorCode::InvalidJsonArguments,
                    format!("Arguments are not valid JSON: {}", truncate(&error, 200)),
                    DecidedBy::Validator { validator: "arguments".into() },
                );
                Err(Box::new((entry.name.clone(), refusal, Some(Value::String(raw)))))
            }
        }
    }

    /// Stages 4-5: permission `tool:<name>:execute`, then the JSON Schema, then host validators.
    #[allow(clippy::result_large_err)] // the same `Refusal` the async stages return, unboxed as there
    pub(super) fn permit_and_validate(
        &self,
        entry: &RegisteredTool,
        arguments: &Value,
        ctx: &Arc<CallContext>,
    ) -> Result<(), Refusal> {
        let name = &*entry.name;
        let permission = Permission::execute(name);
        if !self.permissions.allows(ctx, &permission) {
            return Err(Refusal::new(
                BlockedReason::PermissionDenied,
                CallErrorCode::PermissionDenied,
                format!("Permission denied: {permission}"),
                DecidedBy::Permission { permission: permission.to_string() },
            ));
        }

        if let Err(issue) = self.schema.validate_tool(entry, arguments) {
            let mut refusal = Refusal::new(
                BlockedReason::ValidationFailed,
                CallErrorCode::ValidationFailed,
                issue.message,
                DecidedBy::Validator { validator: "json_schema".into() },
            );
            refusal.error.details = issue.details;
            return Err(refusal);
        }
        for v in &self.validators {
            let verdict =
                std::panic::catch_unwind(AssertUnwindSafe(|| v.validate(entry.spec(), arguments, ctx)))
                    .unwrap_or_else(|panic| {
                        ValidatorVerdict::Message(format!(
                            "validator panicked: {}",
                            panic_message(panic.as_ref())
                        ))
                    });
            let (message, details) = match verdict {
                ValidatorVerdict::Pass => continue,
                ValidatorVerdict::Message(m) => (m, None),
                ValidatorVerdict::Structured(issue) => {
                    let message = match &issue.path {
                        Some(path) if !issue.message.starts_with(path.as_str()) => {
                            format!("{path}: {}", issue.message)
                        }
                        _ => issue.message.clone(),
                    };
                    (message, serde_json::to_value(&issue).ok())
                }
            };
            let mut refusal = Refusal::new(
                BlockedReason::ValidationFailed,
                CallErrorCode::ValidationFailed,
                message,
                DecidedBy::Validator { validator: sanitize_ident(v.name()) },
            );
            refusal.error.details = details;
            return Err(refusal);
        }
        Ok(())
    }
}
