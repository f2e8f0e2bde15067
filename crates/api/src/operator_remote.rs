//! A running hub's command table from another process, over HTTP with a maintained client (reqwest):
//! what `portcullis api` uses to call any command of [`crate::operator_commands!`] on the hub this user
//! runs — found by its runtime file, with the operator's token from the same config folder. The answers
//! are the table's JSON; a failure is the hub's own `{code, message, details}`.

use crate::{ApiError, ErrorCode};
use portcullis_hub::{RuntimeInfo, load_or_create_operator_token};
use serde_json::{Value, json};
use std::path::Path;

/// An HTTP client for a hub: no proxy (a proxy from the environment must never see a token), and the
/// hub's own certificate (`cert`, from its runtime file) trusted when it serves TLS.
pub(crate) fn hub_http_client(cert: Option<&str>) -> Result<reqwest::ClientBuilder, String> {
    let mut builder = reqwest::Client::builder().no_proxy();
    if let Some(cert) = cert {
        let pem = std::fs::read(cert).map_err(|e| format!("the hub's certificate {cert}: {e}"))?;
        let cert = reqwest::Certificate::from_pem(&pem).map_err(|e| format!("the hub's certificate: {e}"))?;
        builder = builder.add_root_certificate(cert);
    }
    Ok(builder)
}

/// A running hub, as its operator reaches it.
pub struct RemoteHub {
    api_url: String,
    token: String,
    client: reqwest::Client,
    /// Who answers through it, as the hub records them (none: the channel, `api`).
    operator: Option<String>,
}

fn unreachable_hub(api_url: &str, e: &reqwest::Error) -> ApiError {
    ApiError::new(ErrorCode::HubUnavailable, format!("{api_url}: {e}"), json!({ "api_url": api_url }))
}

impl RemoteHub {
    /// The hub whose runtime file is in the config folder `dir`, with the operator token kept there.
    /// `hub_unavailable` when none runs.
    pub fn running(dir: &Path) -> Result<RemoteHub, ApiError> {
        let info = RuntimeInfo::read(dir).ok_or_else(|| {
            ApiError::new(
                ErrorCode::HubUnavailable,
                format!(
                    "no hub runs for this user (no runtime file in {}): start `portcullis serve`",
                    dir.display()
                ),
                json!({ "config_dir": dir }),
            )
        })?;
        let token = load_or_create_operator_token(dir).map_err(|e| {
            ApiError::new(ErrorCode::HubUnavailable, format!("the operator token: {e}"), json!({}))
        })?;
        let client = hub_http_client(info.tls_cert.as_deref())
            .map_err(|why| ApiError::new(ErrorCode::HubUnavailable, why, json!({})))?
            .build()
            .map_err(|e| ApiError::new(ErrorCode::BackendFailed, e.to_string(), json!({})))?;
        Ok(RemoteHub { api_url: info.api_url, token: token.trim().to_owned(), client, operator: None })
    }

    /// The hub whose API is at `url` (`http(s)://HOST:PORT`, with or without `/v1`: a forwarded or
    /// remote hub), reached with `token`, that hub's operator token. An `https` hub must present a
    /// certificate this machine trusts.
    pub fn at(url: &str, token: &str) -> Result<RemoteHub, ApiError> {
        let bad =
            |why: String| ApiError::new(ErrorCode::BadArgument, why, json!({ "url": crate::visible(url) }));
        let base = url.trim().trim_end_matches('/');
        let base = base.strip_suffix("/v1").unwrap_or(base);
        let parsed = reqwest::Url::parse(base).map_err(|e| bad(format!("not a hub's address: {e}")))?;
        if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() || parsed.path() != "/"
        {
            return Err(bad("a hub's address is http(s)://HOST:PORT".into()));
        }
        let token = token.trim();
        if token.len() < 32 || token.chars().any(|c| !c.is_ascii_graphic()) {
            return Err(bad(
                "that is not an operator token (the hub's config folder holds it: operator-token)".into(),
            ));
        }
        let client = hub_http_client(None)
            .and_then(|b| b.build().map_err(|e| e.to_string()))
            .map_err(|why| ApiError::new(ErrorCode::BackendFailed, why, json!({})))?;
        Ok(RemoteHub { api_url: format!("{base}/v1"), token: token.to_owned(), client, operator: None })
    }

    /// The same hub, its answers recorded as `operator`'s (`alice (app)`; a short printable name).
    pub fn answering_as(mut self, operator: &str) -> Result<RemoteHub, ApiError> {
        crate::console::check_operator_name(operator)
            .map_err(|why| ApiError::new(ErrorCode::BadArgument, why, json!({})))?;
        self.operator = Some(operator.to_owned());
        Ok(self)
    }

    async fn post(&self, route: &str, name: &str, args: &Value) -> Result<reqwest::Response, ApiError> {
        let url = format!("{}/{route}/{name}", self.api_url);
        let mut request = self.client.post(&url).bearer_auth(&self.token);
        if let Some(operator) = &self.operator {
            request = request.header(crate::operator_http::OPERATOR_HEADER, operator);
        }
        let response = request
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(args.to_string())
            .send()
            .await
            .map_err(|e| unreachable_hub(&self.api_url, &e))?;
        if response.status().is_success() {
            return Ok(response);
        }
        let status = response.status().as_u16();
        let text = response.text().await.unwrap_or_default();
        Err(serde_json::from_str::<Value>(&text)
            .ok()
            .and_then(|v| serde_json::from_value::<ApiError>(v.get("error")?.clone()).ok())
            .unwrap_or_else(|| {
                ApiError::new(
                    ErrorCode::BackendFailed,
                    format!("the hub answered HTTP {status}: {}", text.chars().take(300).collect::<String>()),
                    json!({ "status": status }),
                )
            }))
    }

    /// Runs call `name` with `args` (the arguments' object); its output.
    pub async fn call(&self, name: &str, args: &Value) -> Result<Value, ApiError> {
        let response = self.post("commands", name, args).await?;
        let text = response.text().await.map_err(|e| unreachable_hub(&self.api_url, &e))?;
        serde_json::from_str(&text).map_err(|e| {
            ApiError::new(ErrorCode::BackendFailed, format!("the hub's answer is not JSON: {e}"), json!({}))
        })
    }

    /// Runs stream `name` with `args`: `on_started` gets its id, `on_update` each update until the
    /// stream ends or `on_update` answers false (hanging up then stops it on the hub).
    pub async fn stream(
        &self,
        name: &str,
        args: &Value,
        mut on_started: impl FnMut(u32),
        mut on_update: impl FnMut(Value) -> bool,
    ) -> Result<(), ApiError> {
        let mut response = self.post("streams", name, args).await?;
        // Bytes, not text, until an event is whole: a character may be split between two chunks.
        let mut pending: Vec<u8> = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| unreachable_hub(&self.api_url, &e))? {
            pending.extend_from_slice(&chunk);
            while let Some(end) = pending.windows(2).position(|w| w == b"\n\n") {
                let raw: Vec<u8> = pending.drain(..end + 2).collect();
                let event = String::from_utf8_lossy(&raw);
                let kind = event.lines().find_map(|l| l.strip_prefix("event:")).map(str::trim);
                let data: String =
                    event.lines().filter_map(|l| l.strip_prefix("data:")).map(str::trim).collect();
                if data.is_empty() {
                    continue; // a keep-alive comment
                }
                let value: Value = serde_json::from_str(&data).unwrap_or(Value::String(data));
                if kind == Some("stream") {
                    on_started(value["id"].as_u64().and_then(|id| u32::try_from(id).ok()).unwrap_or(0));
                } else if !on_update(value) {
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// Where the hub's operator API is (`http://ADDR/v1`).
    pub fn api_url(&self) -> &str {
        &self.api_url
    }
}
