//! Who may use the operator console in a browser. An operator front end mints a one-time login code
//! naming the operator it is for ([`LoginCodes`]); the browser exchanges it, once and soon, for a
//! session held by an HttpOnly cookie ([`Sessions`]). Sessions end after an absolute lifetime, after
//! going idle, or at logout. Everything is in memory: a restarted hub forgets every code and login, so
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
pub(crate) fn random_hex(bytes: usize) -> std::io::Result<String> {
    let mut raw = vec![0u8; bytes];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut raw)?;
    Ok(raw.iter().map(|b| format!("{b:02x}")).collect())
}

/// Equal without leaking where the first difference is (the length is not secret).
fn same_secret(a: &str, b: &str) -> bool {
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
    started: Instant,
    last_seen: Instant,
    held: T,
}

/// A session found by its cookie.
#[derive(Debug, Clone)]
pub struct SessionSeen<T> {
    pub operator: String,
    /// What the session holds (the console's API client).
    pub held: T,
    /// When it ends at the latest, in milliseconds since the epoch.
    pub expires_at_ms: u64,
}

/// The console's sessions by their secret, each holding a `T` (its API client).
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

    /// Starts a session for `operator` holding `held`; its secret (the cookie's value).
    pub fn start(&self, operator: String, held: T) -> std::io::Result<String> {
        let secret = random_hex(32)?;
        let now = Instant::now();
        let mut sessions = lock(&self.held);
        sessions.retain(|_, s| self.alive(s, now));
        if sessions.len() >= MAX_SESSIONS {
            let idlest = sessions.iter().min_by_key(|(_, s)| s.last_seen).map(|(k, _)| k.clone());
            if let Some(key) = idlest {
                sessions.remove(&key);
            }
        }
        sessions.insert(secret.clone(), Session { operator, started: now, last_seen: now, held });
        Ok(secret)
    }

    /// The live session `secret` names, seen now (which keeps it from going idle); none when there is
    /// no such session or it has expired (an expired one is ended).
    pub fn touch(&self, secret: &str) -> Option<SessionSeen<T>> {
        let now = Instant::now();
        let mut sessions = lock(&self.held);
        let alive = self.alive(sessions.get(secret)?, now);
        if !alive {
            sessions.remove(secret);
            return None;
        }
        let session = sessions.get_mut(secret)?;
        session.last_seen = now;
        let left = self.settings.session_ttl.saturating_sub(now.duration_since(session.started));
        Some(SessionSeen {
            operator: session.operator.clone(),
            held: session.held.clone(),
            expires_at_ms: wall_ms(left),
        })
    }

    /// Ends session `secret`; whether there was one.
    pub fn end(&self, secret: &str) -> bool {
        lock(&self.held).remove(secret).is_some()
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
        let a = sessions.start("alice".into(), 1).unwrap();
        assert_eq!(sessions.touch(&a).unwrap().operator, "alice");
        assert!(sessions.end(&a));
        assert!(sessions.touch(&a).is_none(), "logged out");

        let idle = sessions.start("alice".into(), 2).unwrap();
        std::thread::sleep(Duration::from_millis(90));
        assert!(sessions.touch(&idle).is_none(), "idle past its limit");

        let busy = sessions.start("bob".into(), 3).unwrap();
        for _ in 0..6 {
            std::thread::sleep(Duration::from_millis(40));
            let _ = sessions.touch(&busy);
        }
        assert!(sessions.touch(&busy).is_none(), "past its lifetime however busy");
        assert_eq!(sessions.live(), 0);
    }

    #[test]
    fn sessions_are_bounded_idlest_first() {
        let sessions = Sessions::new(settings(60_000, 60_000));
        let first = sessions.start("a".into(), 0).unwrap();
        std::thread::sleep(Duration::from_millis(2));
        let rest: Vec<_> = (0..MAX_SESSIONS).map(|i| sessions.start("a".into(), i).unwrap()).collect();
        assert!(sessions.touch(&first).is_none());
        assert!(sessions.touch(&rest[0]).is_some());
        assert_eq!(sessions.live(), MAX_SESSIONS);
    }
}
