//! Request checks that apply to every HTTP request and WebSocket upgrade: the Host must be a
//! loopback name, any port (DNS-rebinding defence), the Origin, when present, must be a page
//! of this hub under the same address; and the response headers that forbid framing and sniffing.

use axum::body::Body;
use axum::extract::Request;
use axum::http::StatusCode;
use axum::http::header::{self, HeaderMap, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The loopback names the hub answers to, and the port after them (`None` when absent).
/// Any port: an SSH tunnel (`ssh -L 9999:127.0.0.1:4747`) or a port forward reaches the hub
/// under another port, and the DNS-rebinding defence is the name — a rebound name is never
/// one of these three.
fn loopback_authority(authority: &str) -> Option<Option<&str>> {
    let (name, port) = match authority.strip_prefix('[') {
        Some(rest) => {
            let (inside, after) = rest.split_once(']')?;
            let port = match after {
                "" => None,
                p => Some(p.strip_prefix(':')?),
            };
            (inside, port)
        }
        None => match authority.split_once(':') {
            Some((n, p)) => (n, Some(p)),
            None => (authority, None),
        },
    };
    let loopback = name.eq_ignore_ascii_case("127.0.0.1")
        || name.eq_ignore_ascii_case("localhost")
        || name == "::1";
    let port_ok =
        port.is_none_or(|p| !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()));
    (loopback && port_ok).then_some(port)
}

/// Checks Host and Origin. `Err` holds a plain explanation.
///
/// `Host` must be `127.0.0.1`, `localhost` or `[::1]`, with any port. `Origin`, when sent,
/// must be `http://` one of those names with the same port as `Host`: the page that asks is
/// one this hub served, under the address the browser used for it (directly or through a
/// tunnel), never a page of another local server.
pub fn check(headers: &HeaderMap) -> Result<(), String> {
    let mut host_values = headers.get_all(header::HOST).iter();
    let host = match (host_values.next(), host_values.next()) {
        (Some(h), None) => h
            .to_str()
            .map_err(|_| "the Host header is not text".to_owned())?,
        (None, _) => return Err("a Host header is required".into()),
        (Some(_), Some(_)) => return Err("more than one Host header".into()),
    };
    let Some(host_port) = loopback_authority(host) else {
        return Err(format!(
            "Host {host:?} is not allowed: graphmind serve answers only to the loopback names \
             127.0.0.1, localhost and [::1] (any port, so an SSH tunnel works)"
        ));
    };
    let mut origins = headers.get_all(header::ORIGIN).iter();
    match (origins.next(), origins.next()) {
        (None, _) => Ok(()),
        (Some(_), Some(_)) => Err("more than one Origin header".into()),
        (Some(o), None) => {
            let o = o
                .to_str()
                .map_err(|_| "the Origin header is not text".to_owned())?;
            let same_hub = o
                .get(..7)
                .filter(|scheme| scheme.eq_ignore_ascii_case("http://"))
                .and_then(|_| loopback_authority(&o[7..]))
                .is_some_and(|origin_port| origin_port == host_port);
            if same_hub {
                Ok(())
            } else {
                Err(format!(
                    "Origin {o:?} is not allowed: only pages served by this graphmind serve \
                     (http://{host}) may talk to it"
                ))
            }
        }
    }
}

fn harden(headers: &mut HeaderMap, api: bool) {
    headers.insert("x-frame-options", HeaderValue::from_static("DENY"));
    headers.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    headers.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    if !headers.contains_key(header::CONTENT_SECURITY_POLICY) {
        headers.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static("frame-ancestors 'none'"),
        );
    }
    if api {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    // Never any CORS: strip whatever a handler might have set.
    let cors: Vec<_> = headers
        .keys()
        .filter(|k| k.as_str().starts_with("access-control-"))
        .cloned()
        .collect();
    for k in cors {
        headers.remove(k);
    }
}

/// A declared body over [`crate::MAX_BODY_BYTES`]: `413` before any of it is read (reading
/// nothing, hyper then closes the connection).
fn oversized(headers: &HeaderMap) -> Option<Response> {
    let declared = headers.get(header::CONTENT_LENGTH)?.to_str().ok()?;
    let len: u128 = declared.trim().parse().ok()?;
    (len > crate::MAX_BODY_BYTES as u128).then(|| {
        (
            StatusCode::PAYLOAD_TOO_LARGE,
            [
                (header::CONTENT_TYPE, "application/json"),
                (header::CONNECTION, "close"),
            ],
            axum::Json(graphmind_protocol::control::ApiError::new(format!(
                "a request body holds at most {} bytes; this one declares {len}",
                crate::MAX_BODY_BYTES
            ))),
        )
            .into_response()
    })
}

/// The middleware.
pub async fn guard(req: Request, next: Next) -> Response {
    let api = req.uri().path().starts_with("/api/") || req.uri().path() == "/health";
    let mut resp = match check(req.headers()) {
        Ok(()) => match oversized(req.headers()) {
            Some(r) => r,
            None => next.run(req).await,
        },
        Err(why) => (
            StatusCode::FORBIDDEN,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            Body::from(format!("403 forbidden: {why}\n")),
        )
            .into_response(),
    };
    harden(resp.headers_mut(), api);
    resp
}

/// The bearer token of a request, if any.
pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    let v = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = v.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

/// Whether the request body is declared as JSON.
pub fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn host_and_origin_rules() {
        // loopback names, any port (an SSH tunnel), or none
        for host in [
            "127.0.0.1:4747",
            "LOCALHOST:4747",
            "[::1]:4747",
            "127.0.0.1:9999",
            "localhost:1",
            "[::1]",
            "127.0.0.1",
        ] {
            assert!(check(&headers(&[("host", host)])).is_ok(), "{host}");
        }
        for host in [
            "evil.test:4747",
            "localhost.evil.test:4747",
            "127.0.0.1.evil.test",
            "127.0.0.1:",
            "127.0.0.1:47a7",
            "127.0.0.1:4747:1",
            "127.0.0.1:1234567",
            "[::1]4747",
            "[::2]:4747",
            "::1",
            "",
        ] {
            assert!(check(&headers(&[("host", host)])).is_err(), "{host}");
        }
        assert!(check(&headers(&[])).is_err());
        let with_origin = |host: &'static str, origin: &'static str| {
            check(&headers(&[("host", host), ("origin", origin)]))
        };
        assert!(with_origin("127.0.0.1:4747", "http://localhost:4747").is_ok());
        assert!(with_origin("127.0.0.1:9999", "http://127.0.0.1:9999").is_ok());
        assert!(with_origin("127.0.0.1", "http://localhost").is_ok());
        // a page of another local server (another port) may not talk to the hub
        assert!(with_origin("127.0.0.1:4747", "http://localhost:3000").is_err());
        assert!(with_origin("127.0.0.1:9999", "http://127.0.0.1:4747").is_err());
        assert!(with_origin("127.0.0.1:4747", "http://127.0.0.1").is_err());
        assert!(with_origin("127.0.0.1:4747", "null").is_err());
        assert!(with_origin("127.0.0.1:4747", "http://evil.test").is_err());
        assert!(with_origin("127.0.0.1:4747", "http://evil.test:4747").is_err());
        assert!(with_origin("127.0.0.1:4747", "https://127.0.0.1:4747").is_err());
        assert!(with_origin("127.0.0.1:4747", "http://127.0.0.1:4747/").is_err());
    }

    #[test]
    fn bearer_and_json_parsing() {
        assert_eq!(
            bearer(&headers(&[("authorization", "Bearer abc")])),
            Some("abc")
        );
        assert_eq!(bearer(&headers(&[("authorization", "Basic abc")])), None);
        assert_eq!(bearer(&headers(&[("authorization", "Bearer ")])), None);
        assert!(is_json(&headers(&[(
            "content-type",
            "application/json; charset=utf-8"
        )])));
        assert!(!is_json(&headers(&[(
            "content-type",
            "application/x-www-form-urlencoded"
        )])));
        assert!(!is_json(&headers(&[("content-type", "text/plain")])));
    }
}
