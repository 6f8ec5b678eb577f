//! `graphmind open` on a machine with no display (ssh, a container): it prints the viewer link
//! on stdout and says why on stderr. Before, it printed "opened the viewer" and exited 0 while
//! nothing could open.

mod support;

use support::*;

#[test]
fn open_without_a_display_prints_the_link_and_does_not_claim_it_opened() {
    let h = hub(|_| {});
    let port = h.port.to_string();
    let env = [("DISPLAY", ""), ("WAYLAND_DISPLAY", "")];
    let out = gm_env(&h.home, &env, &["open", "--port", &port]).expect(0);
    let link = out.stdout.trim();
    assert!(
        link.starts_with(&format!("http://127.0.0.1:{port}/#token=")),
        "{}",
        out.stdout
    );
    assert!(link.ends_with(&h.viewer_token), "{link}");
    assert!(!out.stderr.contains("opened"), "{}", out.stderr);
    assert!(out.stderr.contains("no display"), "{}", out.stderr);
    // --print: the link alone.
    let out = gm_env(&h.home, &env, &["open", "--port", &port, "--print"]).expect(0);
    assert_eq!(out.stdout.trim(), link);
    assert!(out.stderr.is_empty(), "{}", out.stderr);
}
