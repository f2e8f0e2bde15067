//! Multi Round-Trip Requests (SEP-2322) toward a 2026-07-28 agent: that revision has no
//! server-to-client requests, so a question an upstream server asks during the agent's call (its
//! `InputRequiredResult`, or a 2025 server's `elicitation/create`), once the policy let it through as
//! a call of `mcp:<server>:elicitation/create`, reaches the agent as the answer to its `tools/call`: an
//! `InputRequiredResult` whose `requestState` is a random token of ours. The hub's call goes on running
//! in a task of its own, parked on the question; the agent's retried `tools/call` carries the answer and
//! the token, which resumes it.
//!
//! The token is bound to the call: it is kept in the stateless client's own session (another agent's
//! token or client never finds it), it is taken on first use (a replay finds nothing), and the retry
//! must name the same tool with the same arguments (a token replayed for another call is refused, and
//! the parked call waits on for its own retry). An upstream's own `requestState` never reaches the
//! agent: it stays with the hub's call, which hands it back to its server untouched.

use crate::client_side::{ELICITATION, Question, ROOTS, RouteGuard, SAMPLING};
use portcullis_harness::CallErrorCode;
use portcullis_harness::{CallError, CallOutcome, DecidedBy, ToolCallResult};
use rmcp::model::{InputRequest, InputRequests, InputRequiredResult, InputResponses};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::Read;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The key an input request gets when its question came without one (a 2025 server's request).
pub const INPUT_KEY: &str = "portcullis-input";
/// How long a round waits, after its first question, for the others asked with it (an upstream asks
/// several at once; each is judged as a call of its own, and they arrive a moment apart).
pub const GATHER: Duration = Duration::from_millis(25);
/// The most calls one stateless client may have parked on questions at once.
pub const MAX_PARKED: usize = 16;
/// A parked call whose agent has not come back for this long is ended (its question times out).
pub const PARKED_FOR: Duration = Duration::from_secs(15 * 60);

/// A hub call running for a 2026-07-28 request: its task, the questions it asks, how to cancel it.
pub struct RunningCall {
    pub call_id: String,
    pub call: JoinHandle<ToolCallResult>,
    pub questions: mpsc::UnboundedReceiver<Question>,
    pub cancel: CancellationToken,
    /// Keeps the call's agent route (its later questions find it) for as long as the call runs.
    pub route: Option<RouteGuard>,
    /// Answers the agent sent with its call before anything was asked (`inputResponses` without our
    /// `requestState`), by the server's key: a question under that key, once the policy let it
    /// through, is answered with it instead of being put to the agent (each used once).
    pub offered: Box<InputResponses>,
}

/// A call parked on a question, waiting for its agent's retry.
struct Parked {
    running: RunningCall,
    /// Each question's key in the agent's `inputResponses`, and where its answer goes.
    answers: Vec<(String, oneshot::Sender<Result<Value, String>>)>,
    tool: String,
    arguments: Value,
    since: Instant,
}

/// What a retry found.
pub enum Resumed {
    /// The parked call, its question answered.
    Call(RunningCall),
    /// No call is parked on that token for this client (never issued, used already, or expired).
    Unknown,
    /// The token's call is another tool or has other arguments: refused, and left parked.
    OtherCall,
}

/// The calls of one stateless client parked on questions, by token.
#[derive(Default)]
pub struct ParkedCalls(Mutex<HashMap<String, Parked>>);

impl std::fmt::Debug for ParkedCalls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParkedCalls").field("parked", &self.lock().len()).finish()
    }
}

/// What a round ended with: the call's result, or a question for the agent.
pub enum Round {
    Done(ToolCallResult),
    Asked(InputRequiredResult),
}

impl ParkedCalls {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Parked>> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Drops what ended meanwhile or waited too long (a call past [`PARKED_FOR`] is cancelled).
    fn sweep(&self) {
        self.lock().retain(|_, p| {
            let stale = p.since.elapsed() > PARKED_FOR;
            if stale {
                p.running.cancel.cancel();
            }
            !stale && !p.running.call.is_finished()
        });
    }

    /// Runs `running` until it ends or asks a question; a question parks it under a fresh token,
    /// returned to the agent inside an `InputRequiredResult`. `gone`: the agent's request went away
    /// while the call ran (the call is cancelled, as any call of a vanished caller is).
    pub async fn drive(
        &self,
        mut running: RunningCall,
        tool: &str,
        arguments: &Value,
        gone: Option<CancellationToken>,
    ) -> Round {
        let gone = gone.unwrap_or_default();
        loop {
            tokio::select! {
                biased;
                ended = &mut running.call => {
                    return Round::Done(ended.unwrap_or_else(|e| crashed(&e, &running.call_id, tool)));
                }
                Some(question) = running.questions.recv() => {
                    let mut questions = vec![question];
                    while let Ok(Some(more)) = tokio::time::timeout(GATHER, running.questions.recv()).await {
                        questions.push(more);
                    }
                    let questions = answer_offered(&mut running.offered, questions);
                    if questions.is_empty() {
                        continue;
                    }
                    match self.park(running, questions, tool, arguments) {
                        Ok(asked) => return Round::Asked(asked),
                        Err(back) => running = back,
                    }
                }
                () = gone.cancelled(), if !running.cancel.is_cancelled() => running.cancel.cancel(),
            }
        }
    }

    /// Parks `running` on `questions`; when it cannot be parked (too many, no randomness, a question
    /// that does not fit MCP) the questions are answered with why and the call goes on.
    fn park(
        &self,
        running: RunningCall,
        questions: Vec<Question>,
        tool: &str,
        arguments: &Value,
    ) -> Result<InputRequiredResult, RunningCall> {
        self.sweep();
        let refuse = |questions: Vec<Question>, why: String| {
            for question in questions {
                let _ = question.answer.send(Err(why.clone()));
            }
        };
        if self.lock().len() >= MAX_PARKED {
            refuse(questions, format!("the agent has {MAX_PARKED} calls waiting on questions already"));
            return Err(running);
        }
        let token = match fresh_token() {
            Ok(token) => token,
            Err(e) => {
                refuse(questions, format!("no token for the question: {e}"));
                return Err(running);
            }
        };
        let mut requests = InputRequests::new();
        let mut answers = Vec::new();
        let mut unfit = Vec::new();
        for (n, question) in questions.into_iter().enumerate() {
            let key = match &question.key {
                Some(key) if !requests.contains_key(key) => key.clone(),
                _ => format!("{INPUT_KEY}-{}", n + 1),
            };
            match input_request(question.method, &question.params) {
                Ok(request) => {
                    requests.insert(key.clone(), request);
                    answers.push((key, question.answer));
                }
                Err(why) => unfit.push((question, why)),
            }
        }
        for (question, why) in unfit {
            let _ = question.answer.send(Err(why));
        }
        if requests.is_empty() {
            return Err(running);
        }
        let parked = Parked {
            running,
            answers,
            tool: tool.to_owned(),
            arguments: arguments.clone(),
            since: Instant::now(),
        };
        self.lock().insert(token.clone(), parked);
        Ok(InputRequiredResult::new(Some(requests), Some(token)))
    }

    /// Resumes the call parked under `token` with the agent's `responses`, if it is this call's.
    pub fn resume(
        &self,
        token: &str,
        tool: &str,
        arguments: &Value,
        responses: Option<&InputResponses>,
    ) -> Resumed {
        let mut parked = self.lock();
        match parked.get(token) {
            None => return Resumed::Unknown,
            Some(p) if p.tool != tool || &p.arguments != arguments => return Resumed::OtherCall,
            Some(_) => {}
        }
        let Some(p) = parked.remove(token) else { return Resumed::Unknown };
        drop(parked);
        // Keys the agent added that no question had are ignored.
        for (key, answer) in p.answers {
            let given = responses
                .and_then(|r| r.get(&key).cloned())
                .ok_or_else(|| format!("the agent's retry carried no answer to the question {key:?}"));
            let _ = answer.send(given);
        }
        Resumed::Call(p.running)
    }
}

/// Answers each question the agent answered before it was asked (under the server's key), and returns
/// the others. Only a question that reached this point was let through by the policy, so an answer
/// given early is still used only after its question was judged (and recorded with it).
fn answer_offered(offered: &mut InputResponses, questions: Vec<Question>) -> Vec<Question> {
    questions
        .into_iter()
        .filter_map(|question| match question.key.as_ref().and_then(|key| offered.remove(key)) {
            Some(answer) => {
                let _ = question.answer.send(Ok(answer));
                None
            }
            None => Some(question),
        })
        .collect()
}

/// The call ended without a result of its own (its task panicked or was aborted).
fn crashed(e: &tokio::task::JoinError, call_id: &str, tool: &str) -> ToolCallResult {
    ToolCallResult {
        call_id: call_id.into(),
        tool_name: tool.into(),
        outcome: CallOutcome::Error {
            error: CallError::new(CallErrorCode::Internal, format!("the call's task ended: {e}")),
        },
        decided_by: DecidedBy::Default { detail: None },
        redacted: false,
    }
}

/// The input request the agent's revision carries for a relayed `method`.
fn input_request(method: &str, params: &Value) -> Result<InputRequest, String> {
    let wire = match method {
        ROOTS => json!({ "method": ROOTS }),
        ELICITATION | SAMPLING => json!({ "method": method, "params": params }),
        other => return Err(format!("{other} cannot be asked of a 2026-07-28 agent")),
    };
    serde_json::from_value(wire).map_err(|e| format!("the {method} request does not fit MCP: {e}"))
}

/// 32 random bytes as hex: the `requestState` the agent echoes.
fn fresh_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;

    fn running(question: Option<&'static str>) -> (RunningCall, oneshot::Receiver<Result<Value, String>>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let (answer_tx, answer_rx) = oneshot::channel();
        let (got_tx, got_rx) = oneshot::channel::<Result<Value, String>>();
        if let Some(method) = question {
            tx.send(Question { key: Some("confirm".into()), method, params: json!({ "mode": "form", "message": "Deploy?", "requestedSchema": { "type": "object", "properties": {} } }), answer: answer_tx })
                .unwrap();
        }
        let call = tokio::spawn(async move {
            let answer = answer_rx.await.unwrap_or_else(|_| Err("no question".into()));
            let _ = got_tx.send(answer.clone());
            let output = portcullis_harness::ToolOutput::text(format!("{answer:?}"));
            ToolCallResult {
                call_id: "c1".into(),
                tool_name: "t".into(),
                outcome: CallOutcome::Finished { output: std::sync::Arc::new(output) },
                decided_by: DecidedBy::Default { detail: None },
                redacted: false,
            }
        });
        let call_id = "c1".to_owned();
        let cancel = CancellationToken::new();
        (RunningCall { call_id, call, questions: rx, cancel, route: None, offered: Box::default() }, got_rx)
    }

    #[tokio::test]
    async fn a_question_parks_the_call_and_only_its_own_retry_resumes_it_once() {
        let parked = ParkedCalls::default();
        let (call, got) = running(Some(ELICITATION));
        let args = json!({ "env": "prod" });
        let Round::Asked(asked) = parked.drive(call, "deploy", &args, None).await else { panic!("asked") };
        let token = asked.request_state.clone().unwrap();
        assert_eq!(token.len(), 64);
        assert!(asked.input_requests.as_ref().unwrap().contains_key("confirm"), "the server's own key");
        // Another tool, or other arguments, with the token: refused, and the call stays parked.
        assert!(matches!(parked.resume(&token, "other", &args, None), Resumed::OtherCall));
        assert!(matches!(
            parked.resume(&token, "deploy", &json!({ "env": "dev" }), None),
            Resumed::OtherCall
        ));
        // An altered token finds nothing.
        assert!(matches!(parked.resume(&format!("{token}0"), "deploy", &args, None), Resumed::Unknown));
        let mut responses = InputResponses::new();
        responses.insert("confirm".to_owned(), json!({ "action": "accept", "content": { "who": "Ada" } }));
        responses.insert("unasked".to_owned(), json!({ "ignored": true }));
        let Resumed::Call(call) = parked.resume(&token, "deploy", &args, Some(&responses)) else {
            panic!("resumed")
        };
        assert_eq!(got.await.unwrap().unwrap()["content"]["who"], "Ada");
        let Round::Done(result) = parked.drive(call, "deploy", &args, None).await else { panic!("done") };
        assert!(matches!(result.outcome, CallOutcome::Finished { .. }));
        // Used once: a replay finds nothing.
        assert!(matches!(parked.resume(&token, "deploy", &args, Some(&responses)), Resumed::Unknown));
    }

    #[tokio::test]
    async fn an_answer_sent_before_its_question_answers_it_once_the_question_comes() {
        let parked = ParkedCalls::default();
        let (mut call, got) = running(Some(ELICITATION));
        call.offered.insert("confirm".to_owned(), json!({ "action": "accept", "content": { "who": "Ada" } }));
        call.offered.insert("unasked".to_owned(), json!({ "ignored": true }));
        let Round::Done(_) = parked.drive(call, "deploy", &json!({}), None).await else {
            panic!("answered without a round trip")
        };
        assert_eq!(got.await.unwrap().unwrap()["content"]["who"], "Ada");
        // Under another key, the question is put to the agent.
        let (mut call, _got) = running(Some(ELICITATION));
        call.offered.insert("other".to_owned(), json!({ "action": "accept" }));
        assert!(matches!(parked.drive(call, "deploy", &json!({}), None).await, Round::Asked(_)));
    }

    #[tokio::test]
    async fn a_question_of_a_kind_the_agent_cannot_be_asked_is_answered_with_why() {
        let parked = ParkedCalls::default();
        let (call, got) = running(Some("ping"));
        let Round::Done(_) = parked.drive(call, "t", &json!({}), None).await else { panic!("done") };
        assert!(got.await.unwrap().unwrap_err().contains("cannot be asked"));
    }
}
