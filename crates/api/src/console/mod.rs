//! The operator console in a browser: the same UI as the desktop app, served by the hub at `/`, calling
//! the same command table (`/console/v1/commands/{name}`, `/console/v1/streams/{name}`) as the operator
//! whose one-time login code it exchanged for a session cookie. What keeps an agent (or any page the
//! operator's browser opens) from acting as the operator, by construction:
//! - The operator token never travels in a URL: a login link carries a one-time code in its fragment
//!   (never sent to a server, so never logged), usable once within minutes.
//! - The session is an HttpOnly, SameSite=Strict cookie named per hub (`portcullis_console_<port>`)
//!   *and* a page token the login answers in its body ([`SESSION_HEADER`]). Cookies are not bound to
//!   ports (RFC 6265 §8.5): a page on any other port of this host receives the cookie. It never sees
//!   the page token, which the page keeps in its own origin's storage (per scheme, host and port) and
//!   sends as a header on every request, streams included (they are `fetch`es, not `EventSource`s);
//!   the cookie alone is refused. Sessions live in this hub's memory only, so another hub's cookie is
//!   nothing here.
//! - A browser login is weaker than the operator token: what would outlive it (a login link for anyone,
//!   [`BROWSER_REFUSED_COMMANDS`]) needs the token.
//! - Every state change (every POST, the login included) must carry the page's header
//!   ([`PAGE_HEADER`]), which a cross-site form cannot send and a cross-site script cannot send without a
//!   preflight nobody answers, and an Origin that is this hub's own (the site guard refuses any other
//!   Origin and any Host that is not this hub's on every route: DNS rebinding).
//! - Pages are served with a strict CSP and are never framed ([`assets`]).
//! - Refusals are recorded in the ledger like the gateway's.

pub mod assets;

use crate::operator_http::api_error;
use crate::{ApiError, Client, ErrorCode};
use axum::body::Bytes;
use axum::extract::{Path, Request, State};
use axum::middleware::{Next, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use http::{HeaderMap, HeaderValue, Method, header};
use portcullis_hub::{LoginCodes, NoSession, Sessions};
use portcullis_mcp::http::{RefusalLog, RefusedRequest};
use serde_json::json;
use std::sync::Arc;

pub use portcullis_hub::{ConsoleSettings, LoginCode, check_operator_name};

/// The header the console's page adds to every request that changes state.
pub const PAGE_HEADER: &str = "x-portcullis-console";

/// The header carrying a login's page token (what the login answered as `token`) on every request of
/// the session: the cookie alone is no session.
pub const SESSION_HEADER: &str = "x-portcullis-console-session";

/// Commands of the table a browser login may not run, and why: each needs the operator token.
pub const BROWSER_REFUSED_COMMANDS: &[(&str, &str)] = &[(
    "console_link",
    "a browser login cannot make login links (a new login would outlive this one and its logout): \
     only the operator token can (portcullis operator link, or the desktop app)",
)];

/// Why a browser login may not run command (or stream) `name`, if it may not.
pub fn refused_to_browser(name: &str) -> Option<&'static str> {
    BROWSER_REFUSED_COMMANDS.iter().find(|(refused, _)| *refused == name).map(|(_, why)| *why)
}

/// The cookie holding a session of the hub on `port` (cookies are per host, not per port: each hub
/// names its own, so logging in to one leaves another's session alone).
pub fn cookie_name(port: u16) -> String {
    format!("portcullis_console_{port}")
}

/// The console's routes and what they share.
#[derive(Clone)]
pub struct Console {
    sessions: Arc<Sessions<Client>>,
    codes: Arc<LoginCodes>,
    /// A client for a session of the named operator.
    client_for: Arc<dyn Fn(&str) -> Client + Send + Sync>,
    cookie: Arc<str>,
    /// The Origins of this hub's own pages.
    origins: Arc<[String]>,
    settings: ConsoleSettings,
    /// Served over TLS: the cookie is `Secure`.
    secure: bool,
    refusals: Option<Arc<dyn RefusalLog>>,
}

use crate::console_link::ConsoleSession as SessionInfo;

impl Console {
    /// The console of a hub on `port` whose own pages come from `origins`, minting sessions from
    /// `codes`; `client_for` makes each session's API client for its operator.
    pub fn new(
        settings: ConsoleSettings,
        codes: Arc<LoginCodes>,
        port: u16,
        origins: Vec<String>,
        secure: bool,
        client_for: Arc<dyn Fn(&str) -> Client + Send + Sync>,
        refusals: Option<Arc<dyn RefusalLog>>,
    ) -> Self {
        Console {
            sessions: Arc::new(Sessions::new(settings)),
            codes,
            client_for,
            cookie: cookie_name(port).into(),
            origins: origins.into(),
            settings,
            secure,
            refusals,
        }
    }

    /// The console's routes: the pages (open: they hold no secret), the login, and the command table
    /// behind a session.
    pub fn routes<S: Clone + Send + Sync + 'static>(self) -> Router<S> {
        let mut pages = Router::new()
            .route("/", get(|| async { assets::index() }))
            .route("/index.html", get(|| async { assets::index() }))
            .route("/login", get(|| async { assets::login_page() }))
            .route("/login.js", get(|| async { assets::login_script() }))
            .route("/login.css", get(|| async { assets::login_style() }))
            .route(
                "/assets/{*file}",
                get(|request: Request| async move { assets::file(request.uri().path()) }),
            );
        for path in assets::top_level_files() {
            pages = pages.route(path, get(move || async move { assets::file(path) }));
        }
        let table = crate::operator_http::table_routes()
            .route_layer(from_fn_with_state(self.clone(), command_gate))
            .route("/v1/logout", post(logout))
            .route("/v1/me", get(me))
            .layer(from_fn_with_state(self.clone(), session_guard));
        let login = Router::new().route("/v1/login", post(login));
        let api = table.merge(login).layer(from_fn_with_state(self.clone(), page_guard)).with_state(self);
        pages.nest("/console", api)
    }

    fn refused(&self, e: ApiError, request: &Request) -> Response {
        tracing::warn!(code = e.code.as_str(), path = %request.uri().path(), "console request refused");
        if let Some(log) = &self.refusals {
            let status = e.code.http_status();
            log.refused(RefusedRequest::of_status(status, e.code.as_str(), request));
        }
        let mut response = api_error(e);
        assets::secure_headers(response.headers_mut());
        response
    }

    /// The session cookie's value in `headers`, if any.
    fn presented_session(&self, headers: &HeaderMap) -> Option<String> {
        headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|pair| pair.trim().split_once('='))
            .find(|(name, _)| *name == &*self.cookie)
            .map(|(_, value)| value.to_owned())
    }

    fn set_cookie(&self, secret: &str) -> HeaderValue {
        let max_age = self.settings.session_ttl.as_secs();
        let secure = if self.secure { "; Secure" } else { "" };
        let cookie =
            format!("{}={secret}; Path=/; HttpOnly; SameSite=Strict; Max-Age={max_age}{secure}", self.cookie);
        HeaderValue::from_str(&cookie).unwrap_or_else(|_| HeaderValue::from_static(""))
    }

    fn clear_cookie(&self) -> HeaderValue {
        let cookie = format!("{}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0", self.cookie);
        HeaderValue::from_str(&cookie).unwrap_or_else(|_| HeaderValue::from_static(""))
    }
}

fn refusal(code: ErrorCode, message: &str) -> ApiError {
    ApiError::new(code, message, json!({}))
}

/// Every request that is not a read must come from the console's own page: its header, and its
/// Origin (which the site guard has already checked is this hub's, when present) must be present.
async fn page_guard(State(console): State<Console>, request: Request, next: Next) -> Response {
    if matches!(*request.method(), Method::GET | Method::HEAD) {
        return next.run(request).await;
    }
    let headers = request.headers();
    let header_sent = headers.get(PAGE_HEADER).is_some_and(|v| v.as_bytes() == b"1");
    let origin_ok = headers
        .get(header::ORIGIN)
        .and_then(|o| o.to_str().ok())
        .is_some_and(|o| console.origins.iter().any(|allowed| allowed == o));
    let same_site = headers.get("sec-fetch-site").is_none_or(|v| v.as_bytes() == b"same-origin");
    if !(header_sent && origin_ok && same_site) {
        let why = if !header_sent {
            "a change must come from the console's page (its x-portcullis-console header is missing)"
        } else if !origin_ok {
            "a change must come from the console's page (no Origin, or not this hub's)"
        } else {
            "a change must come from the console's page (the browser says it came from another site)"
        };
        return console.refused(refusal(ErrorCode::CrossSiteRefused, why), &request);
    }
    next.run(request).await
}

/// The session the page token ([`SESSION_HEADER`]) names, when the request's cookie is its cookie: its
/// client for the command table, or `not_logged_in` (the cookie alone, a token alone, or a cookie with
/// another browser's token, included).
async fn session_guard(State(console): State<Console>, mut request: Request, next: Next) -> Response {
    let token = request.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let cookie = console.presented_session(request.headers());
    let seen = console.sessions.touch(cookie.as_deref(), token.as_deref());
    let seen = match seen {
        Ok(seen) => seen,
        Err(why) => {
            let message = match why {
                NoSession::Unknown => {
                    "not logged in (or the login ended): open a login link (portcullis operator link)"
                }
                NoSession::TokenMissing => {
                    "the login's cookie alone is no session: the console's page sends its page token \
                     (x-portcullis-console-session) too. Open a login link (portcullis operator link)"
                }
                NoSession::TokenWrong => {
                    "the page token (x-portcullis-console-session) is not this login's: open a login link \
                     (portcullis operator link)"
                }
            };
            return console.refused(refusal(ErrorCode::NotLoggedIn, message), &request);
        }
    };
    request.extensions_mut().insert(seen.held.clone());
    request.extensions_mut().insert(PageToken(seen.token));
    request
        .extensions_mut()
        .insert(SessionInfo { operator: seen.operator, expires_at_ms: seen.expires_at_ms });
    let mut response = next.run(request).await;
    assets::secure_headers(response.headers_mut());
    response
}

/// Refuses the commands a browser login may not run ([`BROWSER_REFUSED_COMMANDS`]), by the name the
/// route decoded (so `console%5Flink` is `console_link` here too).
async fn command_gate(
    State(console): State<Console>,
    Path(name): Path<String>,
    request: Request,
    next: Next,
) -> Response {
    if let Some(why) = refused_to_browser(&name) {
        let e = ApiError::new(
            ErrorCode::CrossSiteRefused,
            format!("{name}: {why}"),
            json!({ "command": name, "needs": "operator_token" }),
        );
        return console.refused(e, &request);
    }
    next.run(request).await
}

/// The page token of the session a request belongs to.
#[derive(Clone)]
struct PageToken(String);

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct LoginBody {
    code: String,
}

/// Exchanges a one-time code for a session: its cookie, and its page token in the body (`token`),
/// which the page sends back as [`SESSION_HEADER`].
async fn login(State(console): State<Console>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, 4096).await.unwrap_or_else(|_| Bytes::new());
    let request = Request::from_parts(parts, axum::body::Body::empty());
    let Ok(LoginBody { code }) = serde_json::from_slice::<LoginBody>(&bytes) else {
        let e = refusal(ErrorCode::BadRequest, "expected {\"code\": \"...\"} (the login link's code)");
        return console.refused(e, &request);
    };
    let Some(operator) = console.codes.redeem(&code) else {
        let e = refusal(
            ErrorCode::LoginRefused,
            "this login link is not valid: it was used already, it expired, or it is not one this hub \
             made (only a login link logs in; no token does). Make another: portcullis operator link",
        );
        return console.refused(e, &request);
    };
    let client = (console.client_for)(&operator);
    let presented = console.presented_session(request.headers());
    let started = match console.sessions.start(operator.clone(), client, presented.as_deref()) {
        Ok(started) => started,
        Err(e) => {
            let e = refusal(ErrorCode::BackendFailed, &format!("no random source for a session: {e}"));
            return console.refused(e, &request);
        }
    };
    tracing::info!(operator = %portcullis_harness::untrusted::visible(&operator), "console login");
    let info = console
        .sessions
        .touch(Some(&started.cookie), Some(&started.token))
        .ok()
        .map(|s| SessionInfo { operator, expires_at_ms: s.expires_at_ms });
    let mut response = Json(json!({ "session": info, "token": started.token })).into_response();
    let headers = response.headers_mut();
    headers.insert(header::SET_COOKIE, console.set_cookie(&started.cookie));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    assets::secure_headers(headers);
    response
}

/// Ends the session (and the browser's others: they share the cookie this clears) and clears its
/// cookie.
async fn logout(State(console): State<Console>, Extension(token): Extension<PageToken>) -> Response {
    console.sessions.end(&token.0);
    let mut response = Json(json!({ "loggedOut": true })).into_response();
    response.headers_mut().insert(header::SET_COOKIE, console.clear_cookie());
    response
}

/// Who this session is, until when.
async fn me(Extension(info): Extension<SessionInfo>) -> Response {
    Json(json!({ "session": info })).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn console_link_needs_the_operator_token() {
        let why = refused_to_browser("console_link").unwrap_or_default();
        assert!(why.contains("operator token"), "{why}");
    }

    #[test]
    fn every_browser_refused_command_is_in_the_table_and_has_its_own_test() {
        let tested = ["console_link"];
        let names: Vec<&str> = BROWSER_REFUSED_COMMANDS.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, tested, "a row added to BROWSER_REFUSED_COMMANDS needs a test above");
        for name in names {
            assert!(crate::COMMANDS.iter().any(|c| c.name == name), "{name} is a command of the table");
        }
        for allowed in ["hub_status", "answer_approval", "follow_events", "console_link2", "Console_link"] {
            assert_eq!(refused_to_browser(allowed), None, "{allowed}");
        }
    }
}
