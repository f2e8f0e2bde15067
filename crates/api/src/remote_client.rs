//! The command table of a hub that runs in another process, with the same methods as the in-process
//! [`Client`]: each call is forwarded over HTTP to the hub's `/v1/commands/NAME` as its operator and its
//! answer read back into the table's type; each stream is `/v1/streams/NAME`, its updates handed to the
//! sink. [`HubClient`] is either one, so a front end (the desktop app attached to a hub `portcullis
//! serve` runs) calls the table the same way wherever the hub runs. Both are made from
//! [`crate::operator_commands!`]: nothing here lists a command by hand.

use super::table::camel_case;
use super::{ApiError, Client, ErrorCode, Sink};
use crate::operator_remote::RemoteHub;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// A hub's command table over HTTP, as its operator (cheap to clone).
#[derive(Clone)]
pub struct RemoteClient {
    hub: Arc<RemoteHub>,
}

/// The table of a hub in this process or in another one.
#[derive(Clone)]
pub enum HubClient {
    InProcess(Client),
    Attached(RemoteClient),
}

fn arguments(pairs: Vec<(&'static str, Result<Value, serde_json::Error>)>) -> Result<Value, ApiError> {
    let mut object = Map::new();
    for (name, value) in pairs {
        let value = value.map_err(|e| {
            ApiError::new(ErrorCode::BadRequest, format!("argument {name}: {e}"), json!({ "argument": name }))
        })?;
        object.insert(camel_case(name), value);
    }
    Ok(Value::Object(object))
}

fn decode<T: DeserializeOwned>(name: &str, value: Value) -> Result<T, ApiError> {
    serde_json::from_value(value).map_err(|e| {
        ApiError::new(
            ErrorCode::BackendFailed,
            format!("{name}: the hub's answer does not fit this Portcullis (another version?): {e}"),
            json!({ "command": name }),
        )
    })
}

impl RemoteClient {
    pub fn new(hub: RemoteHub) -> Self {
        RemoteClient { hub: Arc::new(hub) }
    }

    /// Where the hub's operator API is.
    pub fn api_url(&self) -> &str {
        self.hub.api_url()
    }

    async fn call<T: DeserializeOwned>(&self, name: &str, args: Value) -> Result<T, ApiError> {
        decode(name, self.hub.call(name, &args).await?)
    }

    /// Starts stream `name`; its id once the hub said it, its updates to `sink` from a task of their own
    /// until the stream ends or `sink` answers false.
    async fn stream<T: DeserializeOwned + 'static>(
        &self,
        name: &'static str,
        args: Value,
        mut sink: Sink<T>,
    ) -> Result<u32, ApiError> {
        let (started, id) = tokio::sync::oneshot::channel::<Result<u32, ApiError>>();
        let hub = self.hub.clone();
        tokio::spawn(async move {
            let mut started = Some(started);
            let ended = hub
                .stream(
                    name,
                    &args,
                    |id| {
                        if let Some(started) = started.take() {
                            let _ = started.send(Ok(id));
                        }
                    },
                    |update| match decode::<T>(name, update) {
                        Ok(update) => sink(update),
                        Err(e) => {
                            tracing::warn!("{name}: an update was dropped: {}", e.message);
                            true
                        }
                    },
                )
                .await;
            if let Err(e) = ended {
                match started.take() {
                    Some(started) => {
                        let _ = started.send(Err(e));
                    }
                    None => tracing::warn!("{name}: the stream from the hub ended: {}", e.message),
                }
            }
        });
        id.await.unwrap_or_else(|_| {
            Err(ApiError::new(
                ErrorCode::BackendFailed,
                format!("{name}: the stream ended before it started"),
                json!({}),
            ))
        })
    }
}

macro_rules! remote_adapter {
    (
        calls { $( $(#[$doc:meta])* $name:ident ( $($arg:ident : $ty:ty),* $(,)? ) -> $out:ty ; )* }
        streams { $( $(#[$sdoc:meta])* $sname:ident ( $($sarg:ident : $sty:ty),* $(,)? ) -> $sout:ty ; )* }
    ) => {
        impl RemoteClient {
            $(
                $(#[$doc])*
                pub async fn $name(&self, $($arg: $ty),*) -> Result<$out, ApiError> {
                    let args = arguments(vec![$((stringify!($arg), serde_json::to_value(&$arg))),*])?;
                    self.call(stringify!($name), args).await
                }
            )*
            $(
                $(#[$sdoc])*
                pub async fn $sname(&self, $($sarg: $sty,)* sink: Sink<$sout>) -> Result<u32, ApiError> {
                    let args = arguments(vec![$((stringify!($sarg), serde_json::to_value(&$sarg))),*])?;
                    self.stream(stringify!($sname), args, sink).await
                }
            )*
        }

        impl HubClient {
            $(
                $(#[$doc])*
                pub async fn $name(&self, $($arg: $ty),*) -> Result<$out, ApiError> {
                    match self {
                        HubClient::InProcess(client) => client.$name($($arg),*).await,
                        HubClient::Attached(remote) => remote.$name($($arg),*).await,
                    }
                }
            )*
            $(
                $(#[$sdoc])*
                pub async fn $sname(&self, $($sarg: $sty,)* sink: Sink<$sout>) -> Result<u32, ApiError> {
                    match self {
                        HubClient::InProcess(client) => client.$sname($($sarg,)* sink).await,
                        HubClient::Attached(remote) => remote.$sname($($sarg,)* sink).await,
                    }
                }
            )*
        }
    };
}

crate::operator_commands!(remote_adapter);
