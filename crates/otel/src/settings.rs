//! Where the spans and logs go (`--otlp URL`, else `$OTEL_EXPORTER_OTLP_ENDPOINT`) and whether they
//! carry the calls' arguments and results (`--otlp-include-content`).

use crate::error::OtelError;

/// The standard variable naming the OTLP base endpoint.
pub const ENDPOINT_ENV: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";

/// Where each signal goes below the base endpoint (OTLP/HTTP's standard paths).
pub const TRACES_PATH: &str = "/v1/traces";
pub const LOGS_PATH: &str = "/v1/logs";

/// How a hub exports to OpenTelemetry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtlpSettings {
    /// The OTLP/HTTP base endpoint, e.g. `http://127.0.0.1:4318` (no trailing slash).
    pub endpoint: String,
    /// Export the calls' arguments and results (the ledger's redacted values); off by default.
    pub include_content: bool,
}

impl OtlpSettings {
    /// Settings for the base `endpoint`: an `http` or `https` URL without credentials in it (a
    /// collector's token goes in `$OTEL_EXPORTER_OTLP_HEADERS`, never in a URL that logs show).
    pub fn new(endpoint: &str, include_content: bool) -> Result<OtlpSettings, OtelError> {
        let refuse = |why: &str| OtelError::Endpoint { endpoint: endpoint.to_owned(), why: why.to_owned() };
        let uri: http::Uri =
            endpoint.trim().parse().map_err(|e: http::uri::InvalidUri| refuse(&e.to_string()))?;
        match uri.scheme_str() {
            Some("http" | "https") => {}
            _ => return Err(refuse("not an http:// or https:// URL")),
        }
        let Some(authority) = uri.authority() else { return Err(refuse("no host")) };
        if authority.as_str().contains('@') {
            return Err(refuse("credentials in the URL: put them in $OTEL_EXPORTER_OTLP_HEADERS"));
        }
        if uri.query().is_some() {
            return Err(refuse("a query in the base endpoint"));
        }
        let endpoint = endpoint.trim().trim_end_matches('/').to_owned();
        Ok(OtlpSettings { endpoint, include_content })
    }

    /// The base endpoint `$OTEL_EXPORTER_OTLP_ENDPOINT` names, when set and not empty.
    pub fn endpoint_from_env() -> Option<String> {
        std::env::var(ENDPOINT_ENV).ok().filter(|v| !v.trim().is_empty())
    }

    pub fn traces_url(&self) -> String {
        format!("{}{TRACES_PATH}", self.endpoint)
    }

    pub fn logs_url(&self) -> String {
        format!("{}{LOGS_PATH}", self.endpoint)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_go_below_the_base_endpoint() {
        let settings = OtlpSettings::new("http://127.0.0.1:4318/", false).unwrap();
        assert_eq!(settings.traces_url(), "http://127.0.0.1:4318/v1/traces");
        assert_eq!(settings.logs_url(), "http://127.0.0.1:4318/v1/logs");
        let prefixed = OtlpSettings::new("https://otel.example.com/otlp", true).unwrap();
        assert_eq!(prefixed.traces_url(), "https://otel.example.com/otlp/v1/traces");
    }

    /// Each endpoint refused, and why.
    const REFUSED: [(&str, &str); 5] = [
        ("127.0.0.1:4318", "no scheme"),
        ("grpc://127.0.0.1:4317", "not HTTP"),
        ("http://user:secret@collector:4318", "credentials in the URL"),
        ("http://collector:4318?token=x", "a query"),
        ("http:///v1", "no host"),
    ];

    #[test]
    fn each_unusable_endpoint_is_refused() {
        for (endpoint, why) in REFUSED {
            assert!(OtlpSettings::new(endpoint, false).is_err(), "{why}: {endpoint}");
        }
    }
}
