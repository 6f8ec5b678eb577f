//! `graphmind replay <runId>` hands its app the fetched run in a file only this user can read
//! (issue 34: it was a 0644 file in `/tmp`, alive while the app ran, and another user read an
//! API key from it): while the replayed app runs, the file is 0600 in a new 0700 directory of
//! this user; when the command ends — normally, or stopped by SIGINT — both are gone, and the
//! signal reached the app.

mod support;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use support::{attached, block_on, first_line, hub, run_named, wait_for};

use graphmind_examples::{TICKET, support_agent};

/// The replayed app: prints its pid and `$GRAPHMIND_REPLAY`, then waits until `flag` exists.
const APP: &str = r#"echo "$$ $GRAPHMIND_REPLAY"; while [ ! -e "$0" ]; do sleep 0.05; done"#;

/// `graphmind replay <source> --port <port> -- sh -c APP <flag>`, its stdout piped.
fn start_replay(home: &Path, port: u16, source: &str, flag: &Path) -> Child {
    support::graphmind_in(home)
        .args([
            "replay",
            source,
            "--port",
            &port.to_string(),
            "--",
            "sh",
            "-c",
            APP,
        ])
        .arg(flag)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn graphmind replay")
}

/// The app's first line: its pid and the recording's path (within 20 s).
fn app_line(child: &mut Child) -> (u32, PathBuf) {
    let line = first_line(child);
    let (pid, path) = line.trim().split_once(' ').unwrap_or_else(|| {
        let _ = child.kill();
        panic!("the app printed no `pid path` line: {line:?}")
    });
    (pid.parse().expect("pid"), PathBuf::from(path))
}

/// The recording is a 0600 file of this user in a 0700 directory of this user, holding the
/// whole run.
fn assert_private(path: &Path) {
    let dir = path.parent().expect("in a directory");
    let me = std::fs::metadata(std::env::temp_dir())
        .map(|_| ())
        .and_then(|()| std::fs::metadata("/proc/self"))
        .expect("/proc/self")
        .uid();
    let file = std::fs::symlink_metadata(path).expect("the recording exists while the app runs");
    assert!(file.is_file(), "{path:?} is a plain file");
    assert_eq!(file.permissions().mode() & 0o777, 0o600, "{path:?}");
    assert_eq!(file.uid(), me);
    let d = std::fs::symlink_metadata(dir).expect("its directory");
    assert!(d.is_dir(), "{dir:?} is a directory, not a symlink");
    assert_eq!(d.permissions().mode() & 0o777, 0o700, "{dir:?}");
    assert_eq!(d.uid(), me);
    let text = std::fs::read_to_string(path).expect("readable by its user");
    assert_eq!(
        text.matches("\"node.started\"").count(),
        10,
        "the whole run"
    );
}

fn exit_within(child: &mut Child, secs: u64) -> std::process::ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(s) = child.try_wait().expect("wait") {
            return s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("graphmind replay did not exit within {secs} s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn the_fetched_recording_is_private_while_the_app_runs_and_gone_after_an_end_or_sigint() {
    let h = hub(|c| c.breakpoints.clear());
    let port = h.port;
    block_on(async move {
        let gm = attached(port, "support-agent").await;
        gm.run_result("handle-ticket", support_agent(TICKET))
            .await
            .expect("not aborted")
            .expect("answered");
        gm.dispose().await;
    });
    let runs = wait_for(10, "the run stored", || {
        let runs = h.runs();
        run_named(&runs, "handle-ticket")
            .filter(|r| r["status"] == json!("ok"))
            .map(|_| runs)
    });
    let source = run_named(&runs, "handle-ticket").expect("listed")["runId"]
        .as_str()
        .expect("runId")
        .to_owned();

    // The app ends by itself: the file and directory are gone. (It exits 0 having made no
    // call, so replay exits 1: the app reported no replay.)
    let flag = h.dir.0.join("end-1");
    let mut replay = start_replay(&h.home, port, &source, &flag);
    let (_, path) = app_line(&mut replay);
    assert_private(&path);
    std::fs::write(&flag, "").expect("flag");
    let status = exit_within(&mut replay, 20);
    assert_eq!(status.code(), Some(1));
    assert!(!path.exists(), "{path:?} removed after the app ended");
    assert!(
        !path.parent().expect("dir").exists(),
        "its directory removed too"
    );

    // Stopped by SIGINT (sent to replay alone, as `kill -INT` does) while the app runs.
    let flag = h.dir.0.join("end-2");
    let mut replay = start_replay(&h.home, port, &source, &flag);
    let (app, path) = app_line(&mut replay);
    assert_private(&path);
    let sent = std::process::Command::new("kill")
        .args(["-INT", &replay.id().to_string()])
        .status()
        .expect("kill");
    assert!(sent.success());
    let status = exit_within(&mut replay, 15);
    assert_eq!(status.code(), Some(130), "the shell's status for SIGINT");
    assert!(!path.exists(), "{path:?} removed after SIGINT");
    assert!(
        !path.parent().expect("dir").exists(),
        "its directory removed after SIGINT"
    );
    assert!(
        !Path::new(&format!("/proc/{app}")).exists(),
        "the signal reached the app: it ended with replay"
    );
}
