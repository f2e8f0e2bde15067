//! The original REST routes (`/v1/approvals`, `/v1/session-grants`, …), kept for the scripts that use
//! them, as aliases of the command table: each route names a table command, how the path and body
//! become its arguments, and how its answer is wrapped (the shapes these routes always answered). They
//! call the command through the request's [`Client`] like `/v1/commands/{name}` does — the same
//! checks, the same operator (named by the operator header, else the channel) — so no logic lives here.

use crate::operator_http::{OperatorClients, api_error, call};
use crate::{ApiError, Client, ErrorCode};
use axum::body::Bytes;
use axum::extract::Path;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::{Extension, Router};
use http::StatusCode;
use serde_json::{Value, json};

/// How an alias answers: the table command's output under a key, or a fixed acknowledgement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wrap {
    /// `{"<key>": output}`.
    Under(&'static str),
    /// `{"answered": id, "receipt": output}`.
    Answered,
    /// `{"revoked": id}`.
    Revoked,
    /// `202 {"restarting": id}`.
    Restarting,
    /// `{"accepted": {"server", "tool"}}`.
    Accepted,
}

/// How an alias is requested.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verb {
    Get,
    Post,
    Delete,
}

/// One alias: the route and its verb, the table command it calls, whether the body is the command's
/// `answer` argument (else its whole arguments' object), and how its answer is wrapped.
struct Alias {
    verb: Verb,
    path: &'static str,
    command: &'static str,
    body_is_answer: bool,
    wrap: Wrap,
}

/// Every REST alias (the path's `{id}` becomes the command's `id` argument).
const ALIASES: [Alias; 10] = [
    Alias {
        verb: Verb::Get,
        path: "/v1/approvals",
        command: "pending_approvals",
        body_is_answer: false,
        wrap: Wrap::Under("approvals"),
    },
    Alias {
        verb: Verb::Post,
        path: "/v1/approvals/{id}",
        command: "answer_approval",
        body_is_answer: true,
        wrap: Wrap::Answered,
    },
    Alias {
        verb: Verb::Get,
        path: "/v1/session-grants",
        command: "session_grants",
        body_is_answer: false,
        wrap: Wrap::Under("grants"),
    },
    Alias {
        verb: Verb::Delete,
        path: "/v1/session-grants/{id}",
        command: "revoke_session_grant",
        body_is_answer: false,
        wrap: Wrap::Revoked,
    },
    Alias {
        verb: Verb::Get,
        path: "/v1/sessions",
        command: "sessions",
        body_is_answer: false,
        wrap: Wrap::Under("sessions"),
    },
    Alias {
        verb: Verb::Get,
        path: "/v1/tools",
        command: "tools",
        body_is_answer: false,
        wrap: Wrap::Under("tools"),
    },
    Alias {
        verb: Verb::Get,
        path: "/v1/servers",
        command: "servers",
        body_is_answer: false,
        wrap: Wrap::Under("servers"),
    },
    Alias {
        verb: Verb::Post,
        path: "/v1/servers/{id}/restart",
        command: "restart_server",
        body_is_answer: false,
        wrap: Wrap::Restarting,
    },
    Alias {
        verb: Verb::Get,
        path: "/v1/tool-changes",
        command: "tool_changes",
        body_is_answer: false,
        wrap: Wrap::Under("changes"),
    },
    Alias {
        verb: Verb::Post,
        path: "/v1/tool-changes/accept",
        command: "accept_tool_change",
        body_is_answer: false,
        wrap: Wrap::Accepted,
    },
];

/// The aliases, for the operator token's callers (each request's client chosen as for the table).
pub fn routes<S: Clone + Send + Sync + 'static>(clients: OperatorClients) -> Router<S> {
    let mut router = Router::new();
    for (n, alias) in ALIASES.iter().enumerate() {
        let handler = move |client: Extension<Client>, id: Option<Path<String>>, body: Bytes| async move {
            let alias = &ALIASES[n];
            answer(alias, &client, id.map(|Path(id)| id), &body).await
        };
        let route = match alias.verb {
            Verb::Get => get(handler),
            Verb::Post => post(handler),
            Verb::Delete => delete(handler),
        };
        router = router.route(alias.path, route);
    }
    // One server by id: the table's `servers`, narrowed.
    let one_server = |client: Extension<Client>, Path(id): Path<String>| async move {
        let server = call(&client, "servers", json!({})).await.and_then(|servers| {
            let found = servers.as_array().and_then(|s| s.iter().find(|s| s["id"] == id.as_str()).cloned());
            found.ok_or_else(|| crate::connections::unknown_server(&id))
        });
        match server {
            Ok(server) => axum::Json(json!({ "server": server })).into_response(),
            Err(e) => api_error(e),
        }
    };
    router
        .route("/v1/servers/{id}", get(one_server))
        .layer(axum::middleware::from_fn_with_state(clients, crate::operator_http::with_client))
}

/// Runs `alias`'s command with the path's `id` and the body, and wraps its answer.
async fn answer(alias: &Alias, client: &Client, id: Option<String>, body: &[u8]) -> Response {
    let arguments = match arguments(alias, id.as_deref(), body) {
        Ok(arguments) => arguments,
        Err(e) => return api_error(e),
    };
    let accepted = json!({ "server": arguments["server"], "tool": arguments["tool"] });
    let out = match call(client, alias.command, arguments).await {
        Ok(out) => out,
        Err(e) => return api_error(e),
    };
    let id = id.map_or(Value::Null, |id| id.parse::<u64>().map_or(Value::String(id), Value::from));
    match alias.wrap {
        Wrap::Under(key) => axum::Json(json!({ key: out })).into_response(),
        Wrap::Answered => axum::Json(json!({ "answered": id, "receipt": out })).into_response(),
        Wrap::Revoked => axum::Json(json!({ "revoked": id })).into_response(),
        Wrap::Restarting => (StatusCode::ACCEPTED, axum::Json(json!({ "restarting": id }))).into_response(),
        Wrap::Accepted => axum::Json(json!({ "accepted": accepted })).into_response(),
    }
}

/// The command's arguments: the body's object (or the body as `answer`), with the path's `id`.
fn arguments(alias: &Alias, id: Option<&str>, body: &[u8]) -> Result<Value, ApiError> {
    let body: Value = if body.iter().all(u8::is_ascii_whitespace) {
        json!({})
    } else {
        serde_json::from_slice(body).map_err(|e| {
            ApiError::new(
                ErrorCode::BadRequest,
                format!("{}: the body is not JSON: {e}", alias.path),
                json!({ "line": e.line(), "column": e.column() }),
            )
        })?
    };
    let mut arguments = if alias.body_is_answer { json!({ "answer": body }) } else { body };
    if let (Some(id), Some(fields)) = (id, arguments.as_object_mut()) {
        // `answer_approval` takes a number, the others a name.
        let id = match alias.command {
            "answer_approval" => id.parse::<u64>().map(Value::from).map_err(|_| {
                ApiError::new(
                    ErrorCode::BadRequest,
                    format!("{id:?} is not an approval id"),
                    json!({ "id": id }),
                )
            })?,
            _ => Value::String(id.to_owned()),
        };
        fields.insert("id".into(), id);
    }
    Ok(arguments)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn every_alias_names_a_command_of_the_table_with_the_arguments_it_sends() {
        for alias in &ALIASES {
            let command = crate::COMMANDS.iter().find(|c| c.name == alias.command).unwrap();
            let takes_id = alias.path.contains("{id}");
            assert_eq!(command.args.contains(&"id"), takes_id, "{}", alias.path);
            assert_eq!(command.args.contains(&"answer"), alias.body_is_answer, "{}", alias.path);
        }
    }

    #[test]
    fn the_path_id_and_the_body_become_the_arguments() {
        let answer = &ALIASES[1];
        let args = arguments(answer, Some("7"), br#"{"answer": "once"}"#).unwrap();
        assert_eq!(args, json!({ "id": 7, "answer": { "answer": "once" } }));
        assert!(arguments(answer, Some("x"), b"{}").is_err());
        let revoke = &ALIASES[3];
        assert_eq!(arguments(revoke, Some("g-1"), b"").unwrap(), json!({ "id": "g-1" }));
    }
}
