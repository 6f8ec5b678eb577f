//! Private files and directories: the database, its directory and the run file are
//! readable by their owner only (0600 / 0700).

use std::fs;
use std::io;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Creates `dir` (and its parents) and makes it private (0700).
pub fn private_dir(dir: &Path) -> io::Result<()> {
    fs::create_dir_all(dir)?;
    fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
}

/// Creates the parent of `file` if it is missing; a parent we create is private (0700), an
/// existing one is left alone.
pub fn ensure_parent(file: &Path) -> io::Result<()> {
    match file.parent() {
        Some(p) if !p.as_os_str().is_empty() && !p.exists() => private_dir(p),
        _ => Ok(()),
    }
}

/// Writes `contents` to `file` with mode 0600 (also when it already existed).
pub fn write_private(file: &Path, contents: &[u8]) -> io::Result<()> {
    use std::io::Write;
    let tmp = file.with_extension("tmp");
    {
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)?;
        f.set_permissions(fs::Permissions::from_mode(0o600))?;
        f.write_all(contents)?;
        f.sync_all()?;
    }
    fs::rename(&tmp, file)
}

/// Creates `file` empty with mode 0600 if it does not exist, and makes it 0600 either way.
pub fn touch_private(file: &Path) -> io::Result<()> {
    let f = fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .open(file)?;
    f.set_permissions(fs::Permissions::from_mode(0o600))
}
