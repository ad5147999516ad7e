//! Who may talk to the daemon: the bearer token, and `Host`/`Origin` checks against DNS
//! rebinding.
//!
//! The token never appears in logs or in `Debug` output, and it is compared in constant time.

use std::fmt;

use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// The daemon's bearer token (`HOOKS_MCP_TOKEN` or the file `HOOKS_MCP_TOKEN_FILE` names).
#[derive(Clone)]
pub struct Token(String);

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

/// The shortest token accepted: shorter secrets are guessable.
pub(crate) const MIN_TOKEN_LEN: usize = 16;

impl Token {
    /// Checks a token read from `source` (an environment variable or a file, for messages).
    ///
    /// # Errors
    /// A message naming `source` when the token is shorter than [`MIN_TOKEN_LEN`] or holds
    /// characters an HTTP header cannot carry.
    pub fn new(value: &str, source: &str) -> Result<Token, String> {
        let value = value.trim();
        if value.len() < MIN_TOKEN_LEN {
            return Err(format!(
                "{source}: the token must be at least {MIN_TOKEN_LEN} characters long (got {}); \
                 generate one with `openssl rand -hex 32`",
                value.len()
            ));
        }
        if !value.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(format!(
                "{source}: the token may only hold visible ASCII characters (no spaces or \
                 control characters); generate one with `openssl rand -hex 32`"
            ));
        }
        Ok(Token(value.to_owned()))
    }

    /// Whether `candidate` is this token. The comparison takes the same time wherever the
    /// first difference is (only the length may show).
    pub fn matches(&self, candidate: &[u8]) -> bool {
        bool::from(subtle::ConstantTimeEq::ct_eq(self.0.as_bytes(), candidate))
    }

    /// The token's SHA-256 digest: what credentials issued under it (the console's sessions)
    /// are bound to, so that they end when the token changes. The token cannot be read back
    /// from it.
    pub fn digest(&self) -> [u8; 32] {
        use sha2::Digest as _;
        sha2::Sha256::digest(self.0.as_bytes()).into()
    }
}

/// The `Host` names requests may carry (`*` allows any) and the extra `Origin`s allowed
/// besides those whose host is an allowed host.
#[derive(Debug, Clone)]
pub struct Access {
    /// The bearer token MCP requests must carry, if any.
    pub token: Option<Token>,
    /// Allowed `Host` names (lower case, without brackets or port), or `*`.
    pub allowed_hosts: Vec<String>,
    /// Allowed browser origins besides http(s) origins on an allowed host (`scheme://host[:port]`).
    pub allowed_origins: Vec<String>,
}

/// Why a request was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// No or a wrong bearer token (401).
    Unauthorized,
    /// A `Host` header that is missing or not allowed (400 or 403).
    Host(String),
    /// An `Origin` header that is not allowed (403).
    Origin(String),
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        match self {
            Refusal::Unauthorized => (
                StatusCode::UNAUTHORIZED,
                [(header::WWW_AUTHENTICATE, "Bearer")],
                "Unauthorized: send `Authorization: Bearer <token>` with the daemon's token \
                 (HOOKS_MCP_TOKEN)\n",
            )
                .into_response(),
            Refusal::Host(message)
                if message.starts_with("missing") || message.starts_with("Bad Request") =>
            {
                (StatusCode::BAD_REQUEST, message).into_response()
            }
            Refusal::Host(message) | Refusal::Origin(message) => {
                (StatusCode::FORBIDDEN, message).into_response()
            }
        }
    }
}

/// Host names every daemon accepts: the loopback names.
pub(crate) const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

impl Access {
    /// Checks the bearer token of an MCP request (a no-op without a token).
    ///
    /// # Errors
    /// [`Refusal::Unauthorized`] when the header is missing or wrong.
    pub fn authorize(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        let Some(token) = &self.token else {
            return Ok(());
        };
        let presented = headers
            .get(header::AUTHORIZATION)
            .map(|v| v.as_bytes())
            .and_then(|v| {
                let (scheme, rest) = v.split_at_checked(7)?;
                scheme
                    .eq_ignore_ascii_case(b"bearer ")
                    .then(|| rest.trim_ascii())
            });
        match presented {
            Some(candidate) if token.matches(candidate) => Ok(()),
            _ => Err(Refusal::Unauthorized),
        }
    }

    /// Checks `Host` and `Origin` against DNS rebinding and cross-site requests; `target` is
    /// the authority of a request target in absolute form (`POST http://host/mcp`), which names
    /// the host as much as `Host` does, and is checked too.
    ///
    /// # Errors
    /// [`Refusal::Host`] or [`Refusal::Origin`] saying which header was refused.
    pub fn check_host_and_origin(
        &self,
        headers: &HeaderMap,
        target: Option<&str>,
    ) -> Result<(), Refusal> {
        let mut hosts = headers.get_all(header::HOST).iter();
        let host = hosts
            .next()
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| Refusal::Host("missing or unreadable Host header\n".into()))?;
        if hosts.next().is_some() {
            return Err(Refusal::Host(
                "Bad Request: more than one Host header; send exactly one\n".into(),
            ));
        }
        self.check_host(host)?;
        if let Some(target) = target {
            self.check_host(target)?;
        }
        self.check_origin(headers)
    }

    /// Checks one authority naming the host the request is for.
    fn check_host(&self, host: &str) -> Result<(), Refusal> {
        let host_name = authority_host(host)
            .ok_or_else(|| Refusal::Host(format!("Forbidden: malformed Host header `{host}`\n")))?;
        if !self.host_allowed(&host_name) {
            tracing::warn!(
                host = %host_name,
                "refused a request for a host name this daemon does not serve (possible DNS \
                 rebinding); add it to HOOKS_MCP_ALLOWED_HOSTS if it is yours"
            );
            return Err(Refusal::Host(format!(
                "Forbidden: Host `{host_name}` is not allowed; the daemon's operator can add it \
                 to HOOKS_MCP_ALLOWED_HOSTS\n"
            )));
        }
        Ok(())
    }

    /// Checks `Origin` alone (when present): what a request exempt from the `Host` check
    /// still passes.
    ///
    /// # Errors
    /// [`Refusal::Origin`] for an origin that is not allowed.
    pub fn check_origin(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        let mut origins = headers.get_all(header::ORIGIN).iter();
        let Some(origin) = origins.next() else {
            return Ok(());
        };
        if origins.next().is_some() {
            return Err(Refusal::Origin(
                "Forbidden: more than one Origin header; a browser sends exactly one\n".into(),
            ));
        }
        let origin = origin.to_str().unwrap_or("");
        if self.origin_allowed(origin) {
            return Ok(());
        }
        tracing::warn!(
            origin = %origin,
            "refused a request from a browser origin this daemon does not allow"
        );
        Err(Refusal::Origin(format!(
            "Forbidden: Origin `{origin}` is not allowed; the daemon's operator can add it to \
             HOOKS_MCP_ALLOWED_ORIGINS\n"
        )))
    }

    fn host_allowed(&self, host: &str) -> bool {
        self.allowed_hosts.iter().any(|h| h == "*" || h == host)
    }

    fn origin_allowed(&self, origin: &str) -> bool {
        let origin = origin.trim().to_ascii_lowercase();
        if self.allowed_origins.contains(&origin) {
            return true;
        }
        let Some((scheme, authority)) = origin.split_once("://") else {
            return false;
        };
        if scheme != "http" && scheme != "https" {
            return false;
        }
        match authority_host(authority) {
            Some(host) => self.host_allowed(&host),
            None => false,
        }
    }
}

/// The host of an authority (`host`, `host:port`, `[v6]`, `[v6]:port`), lower-cased and
/// without brackets; `None` when malformed.
pub(crate) fn authority_host(authority: &str) -> Option<String> {
    let authority = authority.trim();
    if authority.is_empty() || authority.contains(['/', '@', ' ']) {
        return None;
    }
    let host = if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        if !(after.is_empty() || after.strip_prefix(':').is_some_and(is_port)) {
            return None;
        }
        host
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) if is_port(port) && !host.contains(':') => host,
            Some(_) => return None,
            None => authority,
        }
    };
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

fn is_port(s: &str) -> bool {
    !s.is_empty() && s.len() <= 5 && s.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn access(token: Option<&str>) -> Access {
        Access {
            token: token.map(|t| Token::new(t, "test").unwrap()),
            allowed_hosts: LOOPBACK_HOSTS.iter().map(|s| s.to_string()).collect(),
            allowed_origins: vec!["https://app.example.com".into()],
        }
    }

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.insert(k.clone(), HeaderValue::from_str(v).unwrap());
        }
        map
    }

    #[test]
    fn tokens_must_be_long_and_printable_and_match_exactly() {
        assert!(
            Token::new("short", "HOOKS_MCP_TOKEN")
                .unwrap_err()
                .starts_with("HOOKS_MCP_TOKEN:")
        );
        assert!(Token::new("0123456789abcdef 12", "t").is_err());
        let token = Token::new("  0123456789abcdef\n", "t").unwrap();
        assert!(token.matches(b"0123456789abcdef"));
        assert!(!token.matches(b"0123456789abcdeF"));
        assert!(!token.matches(b"0123456789abcdef0"));
        assert_eq!(format!("{token:?}"), "Token(<redacted>)");
    }

    #[test]
    fn bearer_header_is_required_when_a_token_is_set() {
        let a = access(Some("0123456789abcdef"));
        assert_eq!(a.authorize(&HeaderMap::new()), Err(Refusal::Unauthorized));
        let good = headers(&[(header::AUTHORIZATION, "Bearer 0123456789abcdef")]);
        assert_eq!(a.authorize(&good), Ok(()));
        let lower = headers(&[(header::AUTHORIZATION, "bearer 0123456789abcdef")]);
        assert_eq!(a.authorize(&lower), Ok(()));
        let basic = headers(&[(header::AUTHORIZATION, "Basic 0123456789abcdef")]);
        assert_eq!(a.authorize(&basic), Err(Refusal::Unauthorized));
        assert_eq!(access(None).authorize(&HeaderMap::new()), Ok(()));
    }

    #[test]
    fn hosts_and_origins_are_checked() {
        let a = access(None);
        let ok = headers(&[(header::HOST, "127.0.0.1:8642")]);
        assert_eq!(a.check_host_and_origin(&ok, None), Ok(()));
        let v6 = headers(&[
            (header::HOST, "[::1]:8642"),
            (header::ORIGIN, "http://localhost:3000"),
        ]);
        assert_eq!(a.check_host_and_origin(&v6, None), Ok(()));
        let evil = headers(&[(header::HOST, "evil.example.com")]);
        assert!(matches!(
            a.check_host_and_origin(&evil, None),
            Err(Refusal::Host(_))
        ));
        let evil_origin = headers(&[
            (header::HOST, "localhost:8642"),
            (header::ORIGIN, "http://evil.example.com"),
        ]);
        assert!(matches!(
            a.check_host_and_origin(&evil_origin, None),
            Err(Refusal::Origin(_))
        ));
        let listed = headers(&[
            (header::HOST, "localhost"),
            (header::ORIGIN, "https://app.example.com"),
        ]);
        assert_eq!(a.check_host_and_origin(&listed, None), Ok(()));
        let null = headers(&[(header::HOST, "localhost"), (header::ORIGIN, "null")]);
        assert!(a.check_host_and_origin(&null, None).is_err());
        assert!(matches!(
            a.check_host_and_origin(&HeaderMap::new(), None),
            Err(Refusal::Host(_))
        ));
        // A second Host or Origin, or a target in absolute form naming another host.
        let mut twice = headers(&[(header::HOST, "localhost")]);
        twice.append(header::HOST, HeaderValue::from_static("evil.example.com"));
        assert!(matches!(
            a.check_host_and_origin(&twice, None),
            Err(Refusal::Host(_))
        ));
        let mut origins = listed.clone();
        origins.append(
            header::ORIGIN,
            HeaderValue::from_static("http://evil.example.com"),
        );
        assert!(matches!(
            a.check_host_and_origin(&origins, None),
            Err(Refusal::Origin(_))
        ));
        assert!(matches!(
            a.check_host_and_origin(&ok, Some("evil.example.com:80")),
            Err(Refusal::Host(_))
        ));
        assert_eq!(a.check_host_and_origin(&ok, Some("localhost:8642")), Ok(()));
        // The origin alone, without a Host.
        assert_eq!(a.check_origin(&HeaderMap::new()), Ok(()));
        let foreign = headers(&[(header::ORIGIN, "http://evil.example.com")]);
        assert!(matches!(a.check_origin(&foreign), Err(Refusal::Origin(_))));
    }

    #[test]
    fn authorities_parse() {
        assert_eq!(authority_host("LocalHost:80").as_deref(), Some("localhost"));
        assert_eq!(authority_host("[::1]").as_deref(), Some("::1"));
        assert_eq!(authority_host("[::1]:x"), None);
        assert_eq!(authority_host("a:b:c"), None);
        assert_eq!(authority_host("user@host"), None);
        assert_eq!(authority_host(""), None);
    }
}
