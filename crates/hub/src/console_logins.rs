//! Who may use the operator console in a browser. An operator front end mints a one-time login code
//! naming the operator it is for ([`LoginCodes`]); the browser exchanges it, once and soon, for a
//! session ([`Sessions`]) held by two secrets: an HttpOnly cookie, and a page token the login answers
//! in its body, which the page keeps and sends as a header. Cookies are not bound to ports, so a page
//! on another port of the same host receives the cookie; it never sees the page token, and the cookie
//! alone is no session. Sessions end after an absolute lifetime, after going idle, or at logout. Everything is in memory: a restarted hub forgets every code and login, so
//! a cookie from another hub (or an earlier run of this one) is never a session here.

use portcullis_harness::untrusted::visible;
use std::collections::HashMap;
use std::io::Read as _;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How the browser console is served, and how long its logins last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConsoleSettings {
    /// Whether `portcullis serve` serves the console (`/`, `/login`, `/console/v1`).
    pub enabled: bool,
    /// How long a login code can be used (once).
    pub code_ttl: Duration,
    /// How long a session lasts from its login, however busy.
    pub session_ttl: Duration,
    /// How long a session lasts without a request.
    pub session_idle: Duration,
}

impl Default for ConsoleSettings {
    /// On; codes last 10 minutes, sessions 12 hours and 2 idle hours.
    fn default() -> Self {
        ConsoleSettings {
            enabled: true,
            code_ttl: Duration::from_secs(10 * 60),
            session_ttl: Duration::from_secs(12 * 60 * 60),
            session_idle: Duration::from_secs(2 * 60 * 60),
        }
    }
}

/// Login codes minted and not yet used: at most this many (the oldest is dropped first).
pub const MAX_LOGIN_CODES: usize = 32;
/// Sessions held at once: at most this many (the one idle longest ends first).
pub const MAX_SESSIONS: usize = 64;
/// Longest operator name a login may carry, in characters.
pub const MAX_OPERATOR_NAME: usize = 64;

/// A fresh secret: `bytes` bytes from the kernel's random source, as lower-case hex.
pub fn random_hex(bytes: usize) -> std::io::Result<String> {
    let mut raw = vec![0u8; bytes];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut raw)?;
    Ok(raw.iter().map(|b| format!("{b:02x}")).collect())
}

/// Equal without leaking where the first difference is (the length is not secret).
pub fn same_secret(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Why a login name is refused: it must be a short printable name.
pub fn check_operator_name(name: &str) -> Result<(), String> {
    let chars = name.chars().count();
    if name.trim().is_empty() {
        return Err("an operator name cannot be empty".into());
    }
    if chars > MAX_OPERATOR_NAME {
        return Err(format!("an operator name has at most {MAX_OPERATOR_NAME} characters, this one {chars}"));
    }
    let shown = visible(name);
    if name.chars().any(char::is_control) || shown != name {
        return Err(format!(
            "an operator name is printable text without control or invisible characters: {shown}"
        ));
    }
    Ok(())
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A code minted for an operator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoginCode {
    /// The secret the login URL carries after `#code=`.
    pub code: String,
    /// Who logs in with it.
    pub operator: String,
    /// When it stops working, in milliseconds since the epoch.
    pub expires_at_ms: u64,
}

struct PendingCode {
    code: String,
    operator: String,
    expires: Instant,
}

/// The login codes a hub minted and nobody has used yet.
pub struct LoginCodes {
    ttl: Duration,
    pending: Mutex<Vec<PendingCode>>,
}

impl LoginCodes {
    pub fn new(ttl: Duration) -> Self {
        LoginCodes { ttl, pending: Mutex::new(Vec::new()) }
    }

    /// A new code for `operator` (a checked name), usable once within the code lifetime.
    pub fn mint(&self, operator: &str) -> Result<LoginCode, String> {
        check_operator_name(operator)?;
        let code = random_hex(24).map_err(|e| format!("no random source: {e}"))?;
        let now = Instant::now();
        let mut pending = lock(&self.pending);
        pending.retain(|p| p.expires > now);
        if pending.len() >= MAX_LOGIN_CODES {
            pending.remove(0);
        }
        pending.push(PendingCode {
            code: code.clone(),
            operator: operator.to_owned(),
            expires: now + self.ttl,
        });
        Ok(LoginCode { code, operator: operator.to_owned(), expires_at_ms: wall_ms(self.ttl) })
    }

    /// The operator `code` was minted for, if it is still pending; it is used up either way.
    pub fn redeem(&self, code: &str) -> Option<String> {
        let now = Instant::now();
        let mut pending = lock(&self.pending);
        pending.retain(|p| p.expires > now);
        // Every pending code is compared (none is skipped after a match), so the time taken says
        // nothing about which one came closest or where it stands.
        let matched: Vec<bool> = pending.iter().map(|p| same_secret(&p.code, code)).collect();
        let at = matched.iter().position(|m| *m)?;
        Some(pending.remove(at).operator)
    }
}

/// Milliseconds since the epoch, `after` from now.
fn wall_ms(after: Duration) -> u64 {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    u64::try_from((now + after).as_millis()).unwrap_or(u64::MAX)
}

struct Session<T> {
    operator: String,
    /// The cookie's value. A browser's tabs share one cookie, so the sessions of one browser do.
    cookie: String,
    started: Instant,
    last_seen: Instant,
    held: T,
}

/// A session found by its cookie and page token.
#[derive(Debug, Clone)]
pub struct SessionSeen<T> {
    pub operator: String,
    /// Its page token.
    pub token: String,
    /// What the session holds (the console's API client).
    pub held: T,
    /// When it ends at the latest, in milliseconds since the epoch.
    pub expires_at_ms: u64,
}

/// A session just started: the cookie's value and the page's token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionStarted {
    /// The cookie's value: the browser's (the one it presented, when that is a live session's).
    pub cookie: String,
    /// The page token: names the session. Answered in the login's body, never in a cookie, and sent
    /// back by the page as a header on every request.
    pub token: String,
}

/// Why a request is no session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NoSession {
    /// Neither the cookie nor the page token is a live session's (none, ended, expired, or another
    /// hub's).
    #[error("not logged in (or the login ended)")]
    Unknown,
    /// The cookie is a live session's but the request carries no page token: a cookie alone is
    /// what a page on another port of this host receives, and is refused.
    #[error("the request carries a login's cookie but not its page token")]
    TokenMissing,
    /// The page token is no live session's, or not one of this cookie's.
    #[error("the page token is not this cookie's login")]
    TokenWrong,
}

/// The console's sessions by their page token, each holding a `T` (its API client).
pub struct Sessions<T> {
    settings: ConsoleSettings,
    held: Mutex<HashMap<String, Session<T>>>,
}

impl<T: Clone> Sessions<T> {
    pub fn new(settings: ConsoleSettings) -> Self {
        Sessions { settings, held: Mutex::new(HashMap::new()) }
    }

    fn alive(&self, session: &Session<T>, now: Instant) -> bool {
        now.duration_since(session.started) < self.settings.session_ttl
            && now.duration_since(session.last_seen) < self.settings.session_idle
    }

    /// Starts a session for `operator` holding `held`: its page token, and its cookie — `presented`
    /// (the cookie the login request carried) when that is a live session's, so a browser's tabs each
    /// keep their login; otherwise a fresh one (a value nobody chose).
    pub fn start(
        &self,
        operator: String,
        held: T,
        presented: Option<&str>,
    ) -> std::io::Result<SessionStarted> {
        let token = random_hex(32)?;
        let fresh = random_hex(32)?;
        let now = Instant::now();
        let mut sessions = lock(&self.held);
        sessions.retain(|_, s| self.alive(s, now));
        if sessions.len() >= MAX_SESSIONS {
            let idlest = sessions.iter().min_by_key(|(_, s)| s.last_seen).map(|(k, _)| k.clone());
            if let Some(key) = idlest {
                sessions.remove(&key);
            }
        }
        let cookie = presented
            .and_then(|presented| {
                sessions.values().map(|s| &s.cookie).find(|c| same_secret(c, presented)).cloned()
            })
            .unwrap_or(fresh);
        let session = Session { operator, cookie: cookie.clone(), started: now, last_seen: now, held };
        sessions.insert(token.clone(), session);
        Ok(SessionStarted { cookie, token })
    }

    /// The live session the page `token` names, when `cookie` is its cookie, seen now (which keeps it
    /// from going idle). Refused when there is no such session or it has expired (an expired one is
    /// ended), when the page token is missing, and when token and cookie are not one session's; a
    /// refusal ends nothing (a page that has only the cookie can neither use nor end a login).
    pub fn touch(&self, cookie: Option<&str>, token: Option<&str>) -> Result<SessionSeen<T>, NoSession> {
        let now = Instant::now();
        let mut sessions = lock(&self.held);
        let cookie_known = cookie.is_some_and(|cookie| {
            sessions.values().filter(|s| self.alive(s, now)).any(|s| same_secret(&s.cookie, cookie))
        });
        let refused = if cookie_known { NoSession::TokenWrong } else { NoSession::Unknown };
        let Some(token) = token else {
            return Err(if cookie_known { NoSession::TokenMissing } else { NoSession::Unknown });
        };
        let session = sessions.get(token).ok_or(refused)?;
        if !self.alive(session, now) {
            sessions.remove(token);
            return Err(refused);
        }
        if !cookie.is_some_and(|cookie| same_secret(&session.cookie, cookie)) {
            return Err(refused);
        }
        let session = sessions.get_mut(token).ok_or(refused)?;
        session.last_seen = now;
        let left = self.settings.session_ttl.saturating_sub(now.duration_since(session.started));
        Ok(SessionSeen {
            operator: session.operator.clone(),
            token: token.to_owned(),
            held: session.held.clone(),
            expires_at_ms: wall_ms(left),
        })
    }

    /// Ends the session of page `token` and every other of its browser (its cookie, which logout
    /// clears); how many ended.
    pub fn end(&self, token: &str) -> usize {
        let mut sessions = lock(&self.held);
        let Some(ended) = sessions.remove(token) else { return 0 };
        let before = sessions.len();
        sessions.retain(|_, s| !same_secret(&s.cookie, &ended.cookie));
        1 + before - sessions.len()
    }

    /// How many sessions are live now.
    pub fn live(&self) -> usize {
        let now = Instant::now();
        lock(&self.held).values().filter(|s| self.alive(s, now)).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(ttl_ms: u64, idle_ms: u64) -> ConsoleSettings {
        ConsoleSettings {
            enabled: true,
            code_ttl: Duration::from_millis(ttl_ms),
            session_ttl: Duration::from_millis(ttl_ms),
            session_idle: Duration::from_millis(idle_ms),
        }
    }

    #[test]
    fn a_code_logs_in_once_and_names_its_operator() {
        let codes = LoginCodes::new(Duration::from_secs(60));
        let code = codes.mint("alice").unwrap();
        assert_eq!(code.code.len(), 48);
        assert_eq!(codes.redeem("0".repeat(48).as_str()), None);
        assert_eq!(codes.redeem(&code.code).as_deref(), Some("alice"));
        assert_eq!(codes.redeem(&code.code), None, "a code is used up");
    }

    #[test]
    fn a_code_expires() {
        let codes = LoginCodes::new(Duration::from_millis(20));
        let code = codes.mint("bob").unwrap();
        std::thread::sleep(Duration::from_millis(40));
        assert_eq!(codes.redeem(&code.code), None);
    }

    #[test]
    fn codes_are_bounded_oldest_first() {
        let codes = LoginCodes::new(Duration::from_secs(60));
        let first = codes.mint("a").unwrap();
        let rest: Vec<_> = (0..MAX_LOGIN_CODES).map(|_| codes.mint("a").unwrap()).collect();
        assert_eq!(codes.redeem(&first.code), None);
        assert!(codes.redeem(&rest[0].code).is_some());
    }

    #[test]
    fn operator_names_are_short_printable_text() {
        for bad in ["", "  ", "al\u{1b}[2Jice", "bob\u{202e}", "x\ny", &"n".repeat(65)] {
            assert!(check_operator_name(bad).is_err(), "{bad:?}");
        }
        for good in ["alice", "Bob Smith", "ops-1", "zoë"] {
            assert!(check_operator_name(good).is_ok(), "{good:?}");
        }
    }

    #[test]
    fn sessions_end_at_logout_when_idle_and_when_old() {
        let sessions = Sessions::new(settings(200, 60));
        let a = sessions.start("alice".into(), 1, None).unwrap();
        assert_eq!(touch(&sessions, &a).unwrap().operator, "alice");
        assert_eq!(sessions.end(&a.token), 1);
        assert_eq!(touch(&sessions, &a).unwrap_err(), NoSession::Unknown, "logged out");

        let idle = sessions.start("alice".into(), 2, None).unwrap();
        std::thread::sleep(Duration::from_millis(90));
        assert_eq!(touch(&sessions, &idle).unwrap_err(), NoSession::Unknown, "idle past its limit");

        let busy = sessions.start("bob".into(), 3, None).unwrap();
        for _ in 0..6 {
            std::thread::sleep(Duration::from_millis(40));
            let _ = touch(&sessions, &busy);
        }
        assert_eq!(touch(&sessions, &busy).unwrap_err(), NoSession::Unknown, "past its lifetime");
        assert_eq!(sessions.live(), 0);
    }

    fn touch<T: Clone>(sessions: &Sessions<T>, s: &SessionStarted) -> Result<SessionSeen<T>, NoSession> {
        sessions.touch(Some(&s.cookie), Some(&s.token))
    }

    #[test]
    fn a_cookie_alone_or_with_another_logins_token_is_no_session_and_ends_nothing() {
        let sessions = Sessions::new(settings(60_000, 60_000));
        let a = sessions.start("alice".into(), 1, None).unwrap();
        let b = sessions.start("bob".into(), 2, None).unwrap();
        assert_ne!(a.cookie, a.token, "two secrets, not one");
        assert_ne!(a.cookie, b.cookie, "two browsers");
        assert_eq!(a.token.len(), 64);
        let (a_cookie, b_token) = (Some(a.cookie.as_str()), Some(b.token.as_str()));
        assert_eq!(sessions.touch(a_cookie, None).unwrap_err(), NoSession::TokenMissing);
        assert_eq!(sessions.touch(a_cookie, b_token).unwrap_err(), NoSession::TokenWrong);
        assert_eq!(sessions.touch(a_cookie, Some("")).unwrap_err(), NoSession::TokenWrong);
        assert_eq!(sessions.touch(None, Some(&a.token)).unwrap_err(), NoSession::Unknown, "no cookie");
        let swapped = sessions.touch(Some(&a.token), Some(&a.cookie)).unwrap_err();
        assert_eq!(swapped, NoSession::Unknown, "swapped");
        assert_eq!(sessions.touch(Some("x"), None).unwrap_err(), NoSession::Unknown);
        assert_eq!(touch(&sessions, &a).unwrap().operator, "alice", "refusals end no session");
        assert_eq!(touch(&sessions, &b).unwrap().operator, "bob");
    }

    #[test]
    fn a_browsers_tabs_share_its_cookie_each_with_its_own_token_and_logout_ends_them_all() {
        let sessions = Sessions::new(settings(60_000, 60_000));
        let first = sessions.start("alice".into(), 1, None).unwrap();
        let second = sessions.start("alice".into(), 2, Some(&first.cookie)).unwrap();
        assert_eq!(second.cookie, first.cookie, "a live session's cookie is kept");
        assert_ne!(second.token, first.token);
        assert_eq!(touch(&sessions, &first).unwrap().held, 1);
        assert_eq!(touch(&sessions, &second).unwrap().held, 2);
        // A cookie nobody was given is not taken up (no fixation).
        let chosen = sessions.start("bob".into(), 3, Some("chosen-by-someone")).unwrap();
        assert_ne!(chosen.cookie, "chosen-by-someone");
        assert_eq!(sessions.end(&second.token), 2, "logout ends the browser's logins");
        assert!(touch(&sessions, &first).is_err());
        assert_eq!(touch(&sessions, &chosen).unwrap().operator, "bob", "another browser's goes on");
    }

    #[test]
    fn sessions_are_bounded_idlest_first() {
        let sessions = Sessions::new(settings(60_000, 60_000));
        let first = sessions.start("a".into(), 0, None).unwrap();
        std::thread::sleep(Duration::from_millis(2));
        let rest: Vec<_> = (0..MAX_SESSIONS).map(|i| sessions.start("a".into(), i, None).unwrap()).collect();
        assert!(touch(&sessions, &first).is_err());
        assert!(touch(&sessions, &rest[0]).is_ok());
        assert_eq!(sessions.live(), MAX_SESSIONS);
    }
}
