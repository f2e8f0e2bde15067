//! The console's files: the UI build embedded at compile time (see `build.rs`) and the login page,
//! each served with the headers that keep a page of the hub's safe in a browser — a strict Content
//! Security Policy (scripts and styles from the hub only, the editor's runtime styles under a nonce
//! made per page), never framed, no referrer, nothing cached that holds a secret.

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};

/// The UI build's files by URL path (`/index.html`, `/assets/…`).
static FILES: &[(&str, &[u8])] = include!(concat!(env!("OUT_DIR"), "/console_files.rs"));

/// The login page and its script (not part of the UI build: it must work before any session exists).
const LOGIN_PAGE: &str = include_str!("login.html");
const LOGIN_SCRIPT: &str = include_str!("login.js");
const LOGIN_STYLE: &str = include_str!("login.css");

/// What a page shows when the binary was built without the UI.
const NOT_BUILT: &str = "<!doctype html><meta charset=utf-8><title>Portcullis</title><p>This Portcullis \
    was built without its console. Build the UI (<code>npm --prefix ui run build</code>), then rebuild \
    (<code>cargo build</code>).</p>";

/// Content types by file extension.
const CONTENT_TYPES: &[(&str, &str)] = &[
    ("html", "text/html; charset=utf-8"),
    ("js", "text/javascript; charset=utf-8"),
    ("mjs", "text/javascript; charset=utf-8"),
    ("css", "text/css; charset=utf-8"),
    ("json", "application/json"),
    ("svg", "image/svg+xml"),
    ("png", "image/png"),
    ("ico", "image/x-icon"),
    ("woff2", "font/woff2"),
    ("woff", "font/woff"),
    ("txt", "text/plain; charset=utf-8"),
    ("wasm", "application/wasm"),
];

fn content_type(path: &str) -> &'static str {
    let ext = path.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
    CONTENT_TYPES.iter().find(|(e, _)| *e == ext).map_or("application/octet-stream", |(_, t)| *t)
}

/// The page's Content Security Policy; `style_nonce` admits the editor's runtime `<style>` elements.
pub fn content_security_policy(style_nonce: Option<&str>) -> String {
    let styles = match style_nonce {
        Some(nonce) => format!("'self' 'nonce-{nonce}'"),
        None => "'self'".to_owned(),
    };
    format!(
        "default-src 'self'; script-src 'self'; style-src {styles}; img-src 'self' data:; font-src 'self'; \
         connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    )
}

/// `body` as `path`'s type with the console's headers; `cache` for content-addressed assets.
fn page(path: &str, body: Body, csp: String, cache: bool) -> Response {
    let mut response = (StatusCode::OK, body).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type(path)));
    if let Ok(csp) = HeaderValue::from_str(&csp) {
        headers.insert(header::CONTENT_SECURITY_POLICY, csp);
    }
    secure_headers(headers);
    let caching = if cache { "public, max-age=31536000, immutable" } else { "no-store" };
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(caching));
    response
}

/// The headers every console answer carries: never framed, no sniffing, no referrer.
pub fn secure_headers(headers: &mut http::HeaderMap) {
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert("cross-origin-opener-policy", HeaderValue::from_static("same-origin"));
    headers.insert("cross-origin-resource-policy", HeaderValue::from_static("same-origin"));
}

/// The console's page (`/`): the UI's index with a fresh nonce for the editor's styles.
pub fn index() -> Response {
    let Some((_, bytes)) = FILES.iter().find(|(p, _)| *p == "/index.html") else {
        return page("/index.html", Body::from(NOT_BUILT), content_security_policy(None), false);
    };
    let nonce = portcullis_hub::random_hex(16).unwrap_or_default();
    let (html, csp) = stamped(&String::from_utf8_lossy(bytes), &nonce);
    page("/index.html", Body::from(html), csp, false)
}

/// The `<style>` element that carries the page's nonce (`ui/index.html`).
const NONCE_CARRIER: &str = "<style id=\"csp-nonce-carrier\"";

/// `html` with `nonce` on its nonce carrier, and the CSP that admits styles under it (without a carrier
/// or a nonce: the page as it is, styles from the hub only).
fn stamped(html: &str, nonce: &str) -> (String, String) {
    if nonce.is_empty() || !html.contains(NONCE_CARRIER) {
        return (html.to_owned(), content_security_policy(None));
    }
    let html = html.replacen(NONCE_CARRIER, &format!("{NONCE_CARRIER} nonce=\"{nonce}\""), 1);
    (html, content_security_policy(Some(nonce)))
}

/// One of the UI build's other files, or 404.
pub fn file(path: &str) -> Response {
    match FILES.iter().find(|(p, _)| *p == path && *p != "/index.html") {
        Some((p, bytes)) => {
            page(p, Body::from(*bytes), content_security_policy(None), p.starts_with("/assets/"))
        }
        None => {
            let mut response = (StatusCode::NOT_FOUND, "not found").into_response();
            secure_headers(response.headers_mut());
            response
        }
    }
}

/// The login page (`/login`): reads the code from the URL's fragment, which no server or log sees.
pub fn login_page() -> Response {
    page("/login.html", Body::from(LOGIN_PAGE), content_security_policy(None), false)
}

/// The login page's script (`/login.js`).
pub fn login_script() -> Response {
    page("/login.js", Body::from(LOGIN_SCRIPT), content_security_policy(None), false)
}

/// The login page's style (`/login.css`).
pub fn login_style() -> Response {
    page("/login.css", Body::from(LOGIN_STYLE), content_security_policy(None), false)
}

/// The UI build's files at its top (icons, manifests), besides the index: each gets its own route.
pub fn top_level_files() -> impl Iterator<Item = &'static str> {
    FILES.iter().map(|(p, _)| *p).filter(|p| *p != "/index.html" && p.matches('/').count() == 1)
}

/// Whether the UI was built into this binary.
pub fn built() -> bool {
    FILES.iter().any(|(p, _)| *p == "/index.html")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_page_is_unframed_and_scripts_come_from_the_hub_only() {
        for response in [index(), login_page(), login_script(), file("/nope")] {
            let headers = response.headers();
            assert_eq!(headers[header::X_FRAME_OPTIONS], "DENY");
            assert_eq!(headers[header::REFERRER_POLICY], "no-referrer");
            if let Some(csp) = headers.get(header::CONTENT_SECURITY_POLICY) {
                let csp = csp.to_str().unwrap();
                assert!(
                    csp.contains("frame-ancestors 'none'") && csp.contains("script-src 'self';"),
                    "{csp}"
                );
                assert!(!csp.contains("unsafe"), "{csp}");
            }
        }
    }

    #[test]
    fn content_types_by_extension() {
        assert_eq!(content_type("/assets/index-1.js"), "text/javascript; charset=utf-8");
        assert_eq!(content_type("/assets/x.css"), "text/css; charset=utf-8");
        assert_eq!(content_type("/x"), "application/octet-stream");
    }

    #[test]
    fn the_nonce_goes_on_the_carrier_and_into_the_csp_and_nowhere_else() {
        let page = "<head><style id=\"csp-nonce-carrier\"></style></head>";
        let (html, csp) = stamped(page, "abc123");
        assert_eq!(html, "<head><style id=\"csp-nonce-carrier\" nonce=\"abc123\"></style></head>");
        assert!(csp.contains("style-src 'self' 'nonce-abc123';"), "{csp}");
        let (html, csp) = stamped("<head></head>", "abc123");
        assert_eq!(html, "<head></head>");
        assert!(!csp.contains("nonce"), "no carrier, no nonce: {csp}");
        assert!(!stamped(page, "").1.contains("nonce"), "no random source, no nonce");
    }

    #[test]
    fn the_index_gets_a_fresh_nonce_each_time() {
        // Without a UI build the index is the page that says how to build it, with no carrier.
        let csp = |r: Response| r.headers()[header::CONTENT_SECURITY_POLICY].to_str().unwrap().to_owned();
        let (a, b) = (csp(index()), csp(index()));
        assert_eq!(a.contains("'nonce-"), built(), "{a}");
        assert!(!built() || a != b, "{a} == {b}");
    }
}
