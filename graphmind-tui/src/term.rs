//! The terminal: enter and restore (raw mode, alternate screen), a panic hook and a drop
//! guard that restore on every exit path, and suspending for `$EDITOR`.

use std::io::{self, Write};

use crossterm::execute;
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};

/// Enters raw mode and the alternate screen, hides the cursor.
pub fn enter() -> io::Result<()> {
    enable_raw_mode()?;
    execute!(io::stdout(), EnterAlternateScreen, crossterm::cursor::Hide)
}

/// Leaves the alternate screen and raw mode, shows the cursor. Safe to call twice.
pub fn restore() {
    let _ = execute!(io::stdout(), LeaveAlternateScreen, crossterm::cursor::Show);
    let _ = disable_raw_mode();
    let _ = io::stdout().flush();
}

/// Restores the terminal before the previous panic hook prints, so the message is readable
/// and the shell usable.
pub fn install_panic_hook() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore();
        previous(info);
    }));
}

/// Restores the terminal when dropped (early returns, `?`).
pub struct Guard;

impl Drop for Guard {
    fn drop(&mut self) {
        restore();
    }
}

/// The editor to use: `$VISUAL`, else `$EDITOR` (non-empty), else none (the inline editor).
#[must_use]
pub fn editor() -> Option<String> {
    ["VISUAL", "EDITOR"]
        .iter()
        .filter_map(|k| std::env::var(k).ok())
        .find(|v| !v.trim().is_empty())
}

/// Leaves the UI, runs `editor` on a file holding `text`, comes back. `Some(text)` when the
/// editor exited 0 and left a non-empty file.
pub fn edit(editor: &str, text: &str) -> Option<String> {
    let dir = std::env::temp_dir();
    let path = dir.join(format!(
        "graphmind-tui-{}-{}.json",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ));
    std::fs::write(&path, format!("{text}\n")).ok()?;
    restore();
    // Through the shell, so `EDITOR="code --wait"` works.
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$1\""))
        .arg("sh")
        .arg(&path)
        .status();
    let _ = enter();
    let out = std::fs::read_to_string(&path).ok();
    let _ = std::fs::remove_file(&path);
    match status {
        Ok(s) if s.success() => out.filter(|t| !t.trim().is_empty()),
        _ => None,
    }
}
