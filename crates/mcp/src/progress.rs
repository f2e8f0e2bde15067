//! A call's progress toward the agent: what the call waits for before it runs, then the tool's own
//! progress, sent as MCP progress notifications on the session's stream or the fast lane's answer.

use portcullis_harness::{EventDelivery, EventPayload, EventSubscription};
use rmcp::model::{
    JsonRpcMessage, Notification, ProgressNotificationParam, ProgressToken, ServerJsonRpcMessage,
    ServerNotification,
};
use rmcp::service::RequestContext;
use rmcp::{Peer, RoleServer};
use serde_json::Value;
use tokio::sync::mpsc;

/// MCP progress from a harness progress value: `{"progress": n, "total"?: n, "message"?: s}` as is;
/// anything else counts as one more step, with the value as the message.
fn progress_param(token: ProgressToken, value: &Value, step: u64) -> ProgressNotificationParam {
    let number = value.get("progress").and_then(Value::as_f64);
    let (progress, total, message) = match number {
        Some(p) => (
            p,
            value.get("total").and_then(Value::as_f64),
            value.get("message").and_then(Value::as_str).map(str::to_owned),
        ),
        None => {
            let text = match value {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            (step as f64, None, Some(text.chars().take(1024).collect()))
        }
    };
    let mut param = ProgressNotificationParam::new(token, progress);
    if let Some(total) = total {
        param = param.with_total(total);
    }
    if let Some(message) = message {
        param = param.with_message(message);
    }
    param
}

/// Where a call served on the fast lane (`fast_lane.rs`) sends its progress: put in the handler's
/// context; the lane turns the answer into an event stream when progress comes before the end. Kept
/// here, with the progress that goes into it, so the handler's progress need not name the lane.
#[derive(Debug, Clone)]
pub struct LaneSink(mpsc::UnboundedSender<ServerJsonRpcMessage>);

impl LaneSink {
    /// A sink sending onto `answer`, the lane's answer to one request.
    pub(crate) fn new(answer: mpsc::UnboundedSender<ServerJsonRpcMessage>) -> Self {
        LaneSink(answer)
    }

    /// Sends one progress notification on the request's answer.
    pub(crate) fn progress(&self, param: ProgressNotificationParam) -> Result<(), String> {
        let notice = ServerNotification::ProgressNotification(Notification::new(param));
        self.0
            .send(JsonRpcMessage::notification(notice))
            .map_err(|_| "the request's answer has ended".to_owned())
    }
}

/// How long a call's answer waits for its progress notifications to be sent (they are queued before
/// the call's end; this bounds the wait if the end was missed, e.g. a lagging subscription).
pub(crate) const PROGRESS_DRAIN: std::time::Duration = std::time::Duration::from_secs(1);

/// Where a call's progress goes: the session's rmcp peer (onto the request's event stream), or the
/// fast lane's own answer to the request ([`LaneSink`]).
pub(crate) enum ProgressSink {
    Peer(Peer<RoleServer>),
    Lane(LaneSink),
}

impl ProgressSink {
    pub(crate) fn of(context: &RequestContext<RoleServer>) -> Self {
        match context.extensions.get::<LaneSink>() {
            Some(lane) => ProgressSink::Lane(lane.clone()),
            None => ProgressSink::Peer(context.peer.clone()),
        }
    }

    async fn send(&self, param: ProgressNotificationParam) {
        let sent = match self {
            ProgressSink::Peer(peer) => peer.notify_progress(param).await.map_err(|e| e.to_string()),
            ProgressSink::Lane(lane) => lane.progress(param),
        };
        if let Err(e) = sent {
            tracing::debug!(error = %e, "progress not delivered");
        }
    }
}

/// Forwards the progress of one call to the client until the call ends: what it waits for before it
/// runs (`waiting`), then the tool's own progress. Steps count across both, so progress increases.
/// It ends at the call's own end event, so every progress the call reported is sent before its answer.
pub(crate) fn forward_progress(
    mut events: EventSubscription,
    mut waiting: mpsc::UnboundedReceiver<String>,
    sink: ProgressSink,
    token: ProgressToken,
    session: String,
    call_id: String,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut step = 0;
        let mut notes_open = true;
        loop {
            let param = tokio::select! {
                note = waiting.recv(), if notes_open => match note {
                    Some(note) => {
                        step += 1;
                        ProgressNotificationParam::new(token.clone(), step as f64).with_message(note)
                    }
                    None => {
                        notes_open = false;
                        continue;
                    }
                },
                delivery = events.recv() => match delivery {
                    Some(EventDelivery::Event(event)) => {
                        if *event.call.session_id != *session || *event.call.call_id != *call_id {
                            continue;
                        }
                        let progress = match &event.payload {
                            EventPayload::Progress { progress } => progress,
                            EventPayload::Finished { .. } | EventPayload::Error { .. } | EventPayload::Blocked { .. } => {
                                break;
                            }
                            _ => continue,
                        };
                        step += 1;
                        progress_param(token.clone(), progress, step)
                    }
                    Some(_) => continue,
                    None => break,
                },
            };
            sink.send(param).await;
        }
    })
}
