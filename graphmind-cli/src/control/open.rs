//! `graphmind open`: the viewer link of a running hub, built from its run file (the link
//! carries the viewer token in its fragment, so it is printed nowhere else but on request).

use serde_json::Value;

use super::target::TargetHub;
use super::{Exit, Fail};
use crate::paths;

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

/// Opens the viewer of the hub `port` names (or the one found as the other commands find
/// it) in the browser; with `print`, or when no browser can be started, prints the link on
/// stdout instead.
pub fn open(port: Option<u16>, print: bool) -> Result<(), Fail> {
    let hub = TargetHub::locate(port)?;
    let link = viewer_link(hub.port)?;
    if !print && crate::browser::open(&link) {
        eprintln!("graphmind: opened the viewer of port {}", hub.port);
        return Ok(());
    }
    if !print {
        eprintln!("graphmind: no browser could be started; open this link:");
    }
    println!("{link}");
    Ok(())
}
