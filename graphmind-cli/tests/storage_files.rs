//! Files on disk: the home and run directories are 0700, the database, its WAL/SHM and the run
//! file are 0600; a custom --db is honoured.

mod support;

use std::os::unix::fs::PermissionsExt;

use serde_json::json;
use support::*;

fn mode(p: &std::path::Path) -> u32 {
    std::fs::metadata(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .permissions()
        .mode()
        & 0o777
}

#[test]
fn directories_are_0700_and_files_0600() {
    // The binary: `graphmind serve` makes its home private, the hub its run directory.
    let h = spawned_hub(&[]);
    block_on(async {
        let _app = App::running(h.port, "run_300000000001", "files").await;
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
    let s = InProcessHub::start_in(&home, |c| c.db = db.to_str().unwrap().into());
    block_on(async {
        let _app = App::running(s.port, "run_300000000002", "custom").await;
    });
    wait_for(10, "the run", || (!s.runs().is_empty()).then_some(()));
    assert_eq!(mode(&db), 0o600);
    assert_eq!(mode(db.parent().unwrap()), 0o700);
    assert!(!home.join("graphmind.db").exists());
    assert_eq!(s.runs()[0]["name"], json!("custom"));
}

#[test]
fn a_second_hub_on_the_same_database_is_refused() {
    let h = hub(|_| {});
    let mut second = std::process::Command::new(env!("CARGO_BIN_EXE_graphmind"))
        .args(["serve", "--port", "0", "--json", "--no-open"])
        .env("GRAPHMIND_HOME", &h.home)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while second.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = second.kill();
            let _ = second.wait();
            panic!("a second hub started on the same database");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = second.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("in use by another graphmind serve"), "{err}");
    assert_eq!(mode(&h.home.join("graphmind.db.lock")), 0o600);
    assert_eq!(h.health()["ok"], json!(true));
}
