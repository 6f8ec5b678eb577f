//! The viewer page, embedded in the binary and served on `/`.
//!
//! A no-build page: plain HTML, CSS and ES modules from `graphmind-hub/assets/`, compiled in
//! with `include_str!`, so running the debugger needs no Node and no network. The page reads
//! the hub's `/ws/ui` feed (`docs/dev/ui-feed.md`).

use axum::Router;
use axum::extract::Path;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

/// The content security policy of the page: only its own scripts, styles and socket.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                   connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// One embedded file: its name under `/assets/`, its media type and its bytes.
struct Asset {
    name: &'static str,
    mime: &'static str,
    body: &'static str,
}

const INDEX: &str = include_str!("../assets/index.html");

/// An [`Asset`] named by its file under `assets/` (the name is also its URL).
macro_rules! asset {
    ($name:literal, $mime:expr) => {
        Asset {
            name: $name,
            mime: $mime,
            body: include_str!(concat!("../assets/", $name)),
        }
    };
}

const JS: &str = "text/javascript; charset=utf-8";

const ASSETS: &[Asset] = &[
    asset!("early.js", JS),
    asset!("main.js", JS),
    asset!("feed.js", JS),
    asset!("stored.js", JS),
    asset!("model.js", JS),
    asset!("layout.js", JS),
    asset!("canvas.js", JS),
    asset!("gate.js", JS),
    asset!("inspector.js", JS),
    asset!("chat.js", JS),
    asset!("timeline.js", JS),
    asset!("viewer.css", "text/css; charset=utf-8"),
    asset!("favicon.svg", "image/svg+xml"),
];

/// Routes of the viewer page and its assets, merged into the hub's router.
pub fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route("/", get(index))
        .route("/index.html", get(index))
        .route("/favicon.ico", get(favicon))
        .route("/assets/{file}", get(asset))
}

fn respond(mime: &'static str, body: &'static str) -> Response {
    let mut res = body.into_response();
    let h = res.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(mime));
    // the binary is the version: a page from an older hub must not linger in the cache
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    res
}

async fn index() -> Response {
    respond("text/html; charset=utf-8", INDEX)
}

async fn favicon() -> Response {
    asset(Path("favicon.svg".to_owned())).await
}

async fn asset(Path(file): Path<String>) -> Response {
    match ASSETS.iter().find(|a| a.name == file) {
        Some(a) => respond(a.mime, a.body),
        None => (StatusCode::NOT_FOUND, "no such viewer asset\n").into_response(),
    }
}

/// Names of the embedded assets (`/assets/<name>`), for tests and diagnostics.
#[cfg(test)]
fn asset_names() -> impl Iterator<Item = &'static str> {
    ASSETS.iter().map(|a| a.name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_module_the_page_imports_is_embedded() {
        let names: Vec<&str> = asset_names().collect();
        for a in ASSETS.iter().filter(|a| a.name.ends_with(".js")) {
            for line in a.body.lines().filter(|l| l.starts_with("import ")) {
                let spec = line.rsplit("from").next().unwrap_or_default();
                let file = spec
                    .trim()
                    .trim_end_matches(';')
                    .trim_matches('\'')
                    .trim_start_matches("./");
                assert!(
                    names.contains(&file),
                    "{} imports {file}, which is not embedded",
                    a.name
                );
            }
        }
        for needed in ["early.js", "main.js", "viewer.css", "favicon.svg"] {
            assert!(
                INDEX.contains(&format!("/assets/{needed}")),
                "index.html does not load {needed}"
            );
        }
    }

    #[test]
    fn every_asset_index_html_names_is_embedded() {
        let names: Vec<&str> = asset_names().collect();
        for part in INDEX.split("\"/assets/").skip(1) {
            let file = part.split('"').next().unwrap_or_default();
            assert!(
                names.contains(&file),
                "index.html loads /assets/{file}, which is not embedded"
            );
        }
    }
}
