//! The command table over HTTP, made mechanically from [`crate::operator_commands!`]: every call is
//! `POST /v1/commands/{name}` with its arguments as one JSON object (the same camelCase keys the desktop
//! app's bindings send) and answers its output as JSON; every stream is `POST /v1/streams/{name}` and
//! answers Server-Sent Events — first `event: stream` with `{"id": n}` (for `stop_stream`), then one
//! `data:` per update — until the stream ends, or the caller hangs up or falls [`STREAM_BACKLOG`]
//! updates behind, which stops it. Failures are the API's `{"error": {code, message, details}}` with the
//! status its code maps to. The routes sit behind the operator's credential like every `/v1` operator
//! route, and one [`Client`] serves them all; the browser console mounts the same routes under
//! `/console`, each session with its own client (the `console` module).

use crate::{ApiError, Client, ErrorCode};
use axum::body::Bytes;
use axum::extract::Path;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Extension, Router};
use futures::StreamExt as _;
use http::StatusCode;
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// The header a caller holding the operator token may send to be recorded by name (`alice (app)`: the
/// desktop app attached to this hub); without it answers are recorded as the channel, `api`.
pub const OPERATOR_HEADER: &str = "x-portcullis-operator";

/// The most operators named through [`OPERATOR_HEADER`] whose clients are kept (the least recently
/// used is dropped first, with its open ledgers and streams).
pub const NAMED_OPERATORS: usize = 16;

/// The token's clients: the channel's own, and one per operator named by [`OPERATOR_HEADER`].
#[derive(Clone)]
pub struct OperatorClients {
    unnamed: Client,
    make: std::sync::Arc<dyn Fn(&str) -> Client + Send + Sync>,
    named: std::sync::Arc<std::sync::Mutex<Vec<(String, Client)>>>,
}

impl OperatorClients {
    /// `unnamed` for requests that name nobody; `make` makes a named operator's client.
    pub fn new(unnamed: Client, make: std::sync::Arc<dyn Fn(&str) -> Client + Send + Sync>) -> Self {
        OperatorClients { unnamed, make, named: Default::default() }
    }

    /// The client for a request's named operator (made on first use), or the unnamed one.
    fn for_name(&self, name: Option<&str>) -> Result<Client, ApiError> {
        let Some(name) = name else { return Ok(self.unnamed.clone()) };
        portcullis_hub::check_operator_name(name).map_err(|why| {
            ApiError::new(ErrorCode::BadRequest, format!("{OPERATOR_HEADER}: {why}"), json!({}))
        })?;
        let mut named = self.named.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(at) = named.iter().position(|(n, _)| n == name) {
            let entry = named.remove(at);
            let client = entry.1.clone();
            named.push(entry);
            return Ok(client);
        }
        if named.len() >= NAMED_OPERATORS {
            named.remove(0);
        }
        let client = (self.make)(name);
        named.push((name.to_owned(), client.clone()));
        Ok(client)
    }
}

/// Puts the request's client (by [`OPERATOR_HEADER`]) in its extensions.
pub(crate) async fn with_client(
    axum::extract::State(clients): axum::extract::State<OperatorClients>,
    mut request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let name = request.headers().get(OPERATOR_HEADER).map(|v| v.to_str().map(str::to_owned));
    let client = match name {
        None => clients.for_name(None),
        Some(Ok(name)) => clients.for_name(Some(&name)),
        Some(Err(_)) => {
            Err(ApiError::new(ErrorCode::BadRequest, format!("{OPERATOR_HEADER}: not text"), json!({})))
        }
    };
    match client {
        Ok(client) => {
            request.extensions_mut().insert(client);
            next.run(request).await
        }
        Err(e) => api_error(e),
    }
}

/// The routes of the command table for the operator token's callers.
pub fn routes<S: Clone + Send + Sync + 'static>(clients: OperatorClients) -> Router<S> {
    table_routes().layer(axum::middleware::from_fn_with_state(clients, with_client))
}

/// The routes of the command table, serving the [`Client`] a layer puts in each request's extensions
/// (the operator's one, or a console session's).
pub fn table_routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new().route("/v1/commands/{name}", post(command)).route("/v1/streams/{name}", post(stream))
}

/// An API error as HTTP: the status its code maps to, `{"error": {code, message, details}}`.
pub fn api_error(e: ApiError) -> Response {
    let status = StatusCode::from_u16(e.code.http_status()).unwrap_or(StatusCode::BAD_REQUEST);
    (status, axum::Json(json!({ "error": e }))).into_response()
}

async fn command(Extension(client): Extension<Client>, Path(name): Path<String>, body: Bytes) -> Response {
    let result = match arguments(&name, &body) {
        Ok(args) => call(&client, &name, args).await,
        Err(e) => Err(e),
    };
    match result {
        Ok(out) => axum::Json(out).into_response(),
        Err(e) => api_error(e),
    }
}

async fn stream(Extension(client): Extension<Client>, Path(name): Path<String>, body: Bytes) -> Response {
    let (updates, received) = mpsc::channel::<Value>(STREAM_BACKLOG);
    let started = match arguments(&name, &body) {
        Ok(args) => start(&client, &name, args, updates).await,
        Err(e) => Err(e),
    };
    let id = match started {
        Ok(id) => id,
        Err(e) => return api_error(e),
    };
    let first = Event::default().event("stream").data(json!({ "id": id }).to_string());
    let rest = futures::stream::unfold(received, |mut received| async move {
        let update = received.recv().await?;
        Some((Event::default().data(update.to_string()), received))
    });
    let events =
        futures::stream::once(async move { first }).chain(rest).map(Ok::<_, std::convert::Infallible>);
    Sse::new(events).keep_alive(KeepAlive::default()).into_response()
}

/// The request body as the arguments' object: empty means none.
fn arguments(name: &str, body: &[u8]) -> Result<Value, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(json!({}));
    }
    serde_json::from_slice(body).map_err(|e| {
        ApiError::new(
            ErrorCode::BadRequest,
            format!("{name}: the body is not JSON: {e}"),
            json!({ "command": name, "line": e.line(), "column": e.column() }),
        )
    })
}

fn parse<T: serde::de::DeserializeOwned>(name: &str, args: Value) -> Result<T, ApiError> {
    serde_json::from_value(args).map_err(|e| {
        ApiError::new(
            ErrorCode::BadRequest,
            format!("{name}: the arguments do not fit: {e}"),
            json!({ "command": name, "arguments": crate::COMMANDS.iter().find(|c| c.name == name).map(|c| c.args) }),
        )
    })
}

fn to_json<T: serde::Serialize>(out: T) -> Result<Value, ApiError> {
    serde_json::to_value(out).map_err(|e| {
        ApiError::new(ErrorCode::BackendFailed, format!("the answer did not serialize: {e}"), json!({}))
    })
}

fn unknown(name: &str) -> ApiError {
    ApiError::new(
        ErrorCode::CommandUnknown,
        format!("no command {:?} in the command table", crate::visible(name)),
        json!({ "command": crate::visible(name) }),
    )
}

/// The most updates a stream holds for a caller that does not read them; past it the caller counts as
/// gone and the stream stops (memory stays bounded whatever the caller does).
pub const STREAM_BACKLOG: usize = 1024;

/// Where a stream's updates go over HTTP: each as JSON into the response's channel.
fn sink_into<T: serde::Serialize + 'static>(updates: mpsc::Sender<Value>) -> crate::Sink<T> {
    Box::new(move |update: T| updates.try_send(serde_json::to_value(update).unwrap_or(Value::Null)).is_ok())
}

macro_rules! http_adapter {
    (
        calls { $( $(#[$doc:meta])* $name:ident ( $($arg:ident : $ty:ty),* $(,)? ) -> $out:ty ; )* }
        streams { $( $(#[$sdoc:meta])* $sname:ident ( $($sarg:ident : $sty:ty),* $(,)? ) -> $sout:ty ; )* }
    ) => {
        /// Each command's arguments as the body carries them.
        #[allow(non_camel_case_types)]
        mod args {
            $(
                #[derive(serde::Deserialize)]
                #[serde(rename_all = "camelCase", deny_unknown_fields)]
                pub struct $name { $(pub $arg: $ty),* }
            )*
            $(
                #[derive(serde::Deserialize)]
                #[serde(rename_all = "camelCase", deny_unknown_fields)]
                pub struct $sname { $(pub $sarg: $sty),* }
            )*
        }

        /// Runs call `name` with `args`.
        pub(crate) async fn call(client: &Client, name: &str, args: Value) -> Result<Value, ApiError> {
            $(
                if name == stringify!($name) {
                    #[allow(unused_variables)]
                    let args: args::$name = parse(name, args)?;
                    return to_json(client.$name($(args.$arg),*).await?);
                }
            )*
            Err(unknown(name))
        }

        /// Starts stream `name` with `args`, its updates sent to `updates`; its id.
        async fn start(
            client: &Client,
            name: &str,
            args: Value,
            updates: mpsc::Sender<Value>,
        ) -> Result<u32, ApiError> {
            $(
                if name == stringify!($sname) {
                    #[allow(unused_variables)]
                    let args: args::$sname = parse(name, args)?;
                    return client.$sname($(args.$sarg,)* sink_into::<$sout>(updates)).await;
                }
            )*
            Err(unknown(name))
        }
    };
}

crate::operator_commands!(http_adapter);
