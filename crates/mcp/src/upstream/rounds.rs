//! Multi Round-Trip Requests (SEP-2322, MCP 2026-07-28) of an upstream server, bridged to the agent
//! whose call asked: a `tools/call` answered with an `InputRequiredResult` has each of its input
//! requests (elicitation, sampling, roots) relayed to that agent as a judged call of
//! `mcp:<server>:elicitation/create` (or sampling, or roots) — exactly the path a 2025 server's own
//! server-to-client request takes — and the call is retried with the answers and the server's
//! `requestState`, passed back untouched, until the server gives a result or the rounds run out.

use crate::client_side::{CallOrigin, ClientRelay, ELICITATION, ROOTS, SAMPLING};
use portcullis_harness::CallErrorCode;
use portcullis_harness::ToolError;
use rmcp::model::{InputRequest, InputRequiredResult, InputResponses};
use serde_json::{Value, json};
use std::sync::Arc;

/// The most input rounds one call drives before it gives up (a server that keeps asking).
pub(super) const MAX_ROUNDS: usize = 8;

/// Sends the request `build` makes (given the answers and the server's state of the round before, none
/// at first) until the server answers with something other than an `InputRequiredResult`, each round's
/// questions answered by the agent of the call (`origin`); at most [`MAX_ROUNDS`] rounds.
pub(super) async fn exchange(
    reach: &super::request::Reach,
    invocation: &portcullis_harness::ToolInvocation,
    origin: &CallOrigin,
    build: impl Fn(Option<InputResponses>, Option<String>) -> Result<rmcp::model::ClientRequest, ToolError>,
) -> Result<rmcp::model::ServerResult, ToolError> {
    let (mut responses, mut state) = (None, None);
    for _round in 0..=MAX_ROUNDS {
        let request = build(responses.take(), state.take())?;
        let progress = Some(&invocation.progress);
        let answer =
            super::request::send(reach, request, progress, &invocation.cancel, Some(origin.clone())).await?;
        let rmcp::model::ServerResult::InputRequiredResult(asked) = answer else { return Ok(answer) };
        let answers = answer_all(&reach.server, reach.relay.as_ref(), Some(origin), &asked).await?;
        responses = (!answers.is_empty()).then_some(answers);
        state = asked.request_state;
    }
    Err(ToolError::new(
        CallErrorCode::UpstreamError,
        format!("{} kept asking for input past {MAX_ROUNDS} rounds", reach.server),
    ))
}

/// The method an input request relays, and its parameters as the agent's revision sends them; a kind
/// of request this build does not know is refused by name.
fn method_and_params(request: &InputRequest) -> Result<(&'static str, Value), String> {
    let params = |p: Result<Value, serde_json::Error>| p.map_err(|e| e.to_string());
    Ok(match request {
        InputRequest::Elicitation(r) => (ELICITATION, params(serde_json::to_value(&r.params))?),
        InputRequest::CreateMessage(r) => (SAMPLING, params(serde_json::to_value(&r.params))?),
        InputRequest::ListRoots(_) => (ROOTS, json!({})),
        other => {
            let method =
                serde_json::to_value(other).ok().and_then(|v| v["method"].as_str().map(str::to_owned));
            return Err(format!("an input request of a kind Portcullis does not relay ({method:?})"));
        }
    })
}

/// Answers every input request of `asked` through the agent of the call (`origin`), each judged by
/// the policy as a call of its own: the responses for the retry, keyed as the server keyed them.
/// A request the policy forbids, the operator denies or the agent fails ends the call with that error
/// (the server's state is not retried with a made-up answer).
async fn answer_all(
    server: &str,
    relay: Option<&Arc<dyn ClientRelay>>,
    origin: Option<&CallOrigin>,
    asked: &InputRequiredResult,
) -> Result<InputResponses, ToolError> {
    let mut responses = InputResponses::new();
    let Some(requests) = asked.input_requests.as_ref().filter(|r| !r.is_empty()) else {
        return Ok(responses);
    };
    let (Some(relay), Some(origin)) = (relay, origin) else {
        return Err(ToolError::new(
            CallErrorCode::UpstreamError,
            format!(
                "{server} asked for input (a multi round-trip request), which Portcullis relays only during a call it can tell"
            ),
        ));
    };
    // All of a round's questions at once, each its own judged call, so that a 2026-07-28 agent is
    // asked them together (one InputRequiredResult); each carries the server's key for its answer.
    let mut asking = tokio::task::JoinSet::new();
    for (key, request) in requests {
        let (method, mut params) = method_and_params(request).map_err(|e| {
            ToolError::new(
                CallErrorCode::UpstreamError,
                format!("{server} asked for input that does not fit MCP: {e}"),
            )
        })?;
        if let Value::Object(map) = &mut params {
            let meta = map.entry("_meta").or_insert_with(|| json!({}));
            if let Value::Object(meta) = meta {
                meta.insert(crate::client_side::KEY_META.to_owned(), Value::String(key.clone()));
            }
        }
        let (relay, origin, server, key) = (relay.clone(), origin.clone(), server.to_owned(), key.clone());
        asking.spawn(async move { (key, method, relay.relay(&server, origin, method, params).await) });
    }
    while let Some(asked) = asking.join_next().await {
        let (key, method, answer) = asked.map_err(|e| {
            ToolError::new(
                CallErrorCode::UpstreamError,
                format!("{server} asked for input, which failed: {e}"),
            )
        })?;
        let answer = answer.map_err(|e| {
            ToolError::new(
                CallErrorCode::UpstreamError,
                format!(
                    "{server} asked for input ({method}), which was not answered: {}",
                    super::cut(&e.message, 4096)
                ),
            )
        })?;
        responses.insert(key, answer);
    }
    Ok(responses)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn each_kind_of_input_request_relays_its_method_with_its_params() {
        let elicit: InputRequest = serde_json::from_value(json!({
            "method": "elicitation/create",
            "params": { "mode": "form", "message": "Deploy?", "requestedSchema": { "type": "object", "properties": {} } }
        }))
        .unwrap();
        let (method, params) = method_and_params(&elicit).unwrap();
        assert_eq!(method, ELICITATION);
        assert_eq!(params["message"], "Deploy?");
        let roots: InputRequest = serde_json::from_value(json!({ "method": "roots/list" })).unwrap();
        assert_eq!(method_and_params(&roots).unwrap().0, ROOTS);
    }

    #[tokio::test]
    async fn input_asked_outside_a_call_that_can_be_told_is_an_error_not_an_answer() {
        let asked: InputRequiredResult = serde_json::from_value(json!({
            "resultType": "input_required",
            "inputRequests": { "confirm": { "method": "roots/list" } },
            "requestState": "s1"
        }))
        .unwrap();
        let e = answer_all("fixture", None, None, &asked).await.unwrap_err();
        assert!(e.message.contains("multi round-trip"), "{e:?}");
        // No requests (state only): nothing to relay, nothing refused.
        let state_only: InputRequiredResult =
            serde_json::from_value(json!({ "resultType": "input_required", "requestState": "s2" })).unwrap();
        assert!(answer_all("fixture", None, None, &state_only).await.unwrap().is_empty());
    }
}
