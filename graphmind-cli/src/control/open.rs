//! `graphmind open`: the viewer link of a running hub, built from its run file (the link
//! carries the viewer token in its fragment, so it is printed nowhere else but on request).

use serde_json::Value;

use super::target::TargetHub;
use super::{Exit, Fail};
use graphmind_connect::paths;

/// The viewer link of the hub on `port`: `<url>/#token=<viewer token>` from its run file.
pub fn viewer_link(port: u16) -> Result<String, Fail> {
    let file = paths::run_file(port);
    let text = std::fs::read_to_string(&file).map_err(|e| {
        Fail::new(
            Exit::Unreachable,
            format!(
                "cannot read the run file {} ({e}); is `graphmind serve` running on port {port} \
                 with this GRAPHMIND_HOME?",
                file.display()
            ),
        )
    })?;
    let doc: Value = serde_json::from_str(&text)
        .map_err(|_| Fail::new(Exit::Unreachable, format!("{} is not JSON", file.display())))?;
    let token = doc
        .get("viewerToken")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| {
            Fail::new(
                Exit::Unauthorized,
                format!(
                    "{} holds no viewer token (a hub of an older version?): open the link its \
                     `graphmind serve` printed",
                    file.display()
                ),
            )
        })?;
    let url = doc
        .get("url")
        .and_then(Value::as_str)
        .map_or_else(|| format!("http://127.0.0.1:{port}"), str::to_owned);
    Ok(format!("{}/#token={token}", url.trim_end_matches('/')))
}

/// Asks the desktop's browser to open the viewer of the hub `port` names (or the one found as
/// the other commands find it); with `print`, or when no browser can be asked (no display, no
/// opener), prints the link on stdout instead, saying why on stderr.
pub fn open(port: Option<u16>, print: bool) -> Result<(), Fail> {
    let hub = TargetHub::locate(port)?;
    let link = viewer_link(hub.port)?;
    if print {
        println!("{link}");
        return Ok(());
    }
    match crate::browser::open(&link) {
        Ok(opener) => {
            eprintln!(
                "graphmind: asked {opener} to open the viewer of port {}",
                hub.port
            );
        }
        Err(why) => {
            eprintln!("graphmind: {why}: open this link in a browser:");
            println!("{link}");
        }
    }
    Ok(())
}
