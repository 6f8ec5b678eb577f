//! Files on disk: the home and run directories are 0700, the database, its WAL/SHM and the run
//! file are 0600; a custom --db is honoured.

mod serve_support;

use std::os::unix::fs::PermissionsExt;

use serde_json::json;
use serve_support::*;

fn mode(p: &std::path::Path) -> u32 {
    std::fs::metadata(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .permissions()
        .mode()
        & 0o777
}

#[test]
fn directories_are_0700_and_files_0600() {
    let h = hub(&[]);
    block_on(async {
        let mut app = App::connect(h.port).await;
        app.start_run("run_300000000001", "files").await;
    });
    wait_for(10, "the run", || (!h.runs().is_empty()).then_some(()));
    assert_eq!(mode(&h.home), 0o700);
    assert_eq!(mode(&h.home.join("run")), 0o700);
    assert_eq!(mode(&h.run_file()), 0o600);
    for f in ["graphmind.db", "graphmind.db-wal", "graphmind.db-shm"] {
        assert_eq!(mode(&h.home.join(f)), 0o600, "{f}");
    }
}

#[test]
fn custom_db_path_is_used_and_private() {
    let dir = TempDir::new("db");
    let db = dir.0.join("sub").join("custom.db");
    let home = dir.0.join("home");
    let s = Serve::start_in(&home, &["--db", db.to_str().unwrap()]);
    block_on(async {
        let mut app = App::connect(s.port).await;
        app.start_run("run_300000000002", "custom").await;
    });
    wait_for(10, "the run", || (!s.runs().is_empty()).then_some(()));
    assert_eq!(mode(&db), 0o600);
    assert_eq!(mode(db.parent().unwrap()), 0o700);
    assert!(!home.join("graphmind.db").exists());
    assert_eq!(s.runs()[0]["name"], json!("custom"));
}
