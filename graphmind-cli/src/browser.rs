//! Opening a link in the desktop's browser.

use std::time::{Duration, Instant};

/// How long an opener is watched for a failure it reports at once (no handler, no display).
const OPENER_GRACE: Duration = Duration::from_millis(1500);

/// Why no browser can be opened here, if that is known before trying: on Linux and the other
/// X11/Wayland systems, neither `$DISPLAY` nor `$WAYLAND_DISPLAY` names a display.
fn no_display() -> Option<String> {
    if cfg!(any(target_os = "macos", target_os = "windows")) {
        return None;
    }
    let set = |k: &str| std::env::var_os(k).is_some_and(|v| !v.is_empty());
    (!set("DISPLAY") && !set("WAYLAND_DISPLAY"))
        .then(|| "no display ($DISPLAY and $WAYLAND_DISPLAY are unset)".to_owned())
}

/// Hands `url` to the desktop's opener (`xdg-open`, `open` on macOS), best effort: the
/// opener's name, or why no browser could be asked (no display, the opener missing, or the
/// opener failing at once). A browser asked is not proof that a page opened.
pub fn open(url: &str) -> Result<&'static str, String> {
    if let Some(why) = no_display() {
        return Err(why);
    }
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    let mut child = std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start {opener}: {e}"))?;
    let start = Instant::now();
    while start.elapsed() < OPENER_GRACE {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(opener),
            Ok(Some(status)) => return Err(format!("{opener} failed ({status})")),
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(_) => break,
        }
    }
    // Still running (it may wait for the browser): reap it so it does not linger as a zombie.
    std::thread::spawn(move || {
        let _ = child.wait();
    });
    Ok(opener)
}
