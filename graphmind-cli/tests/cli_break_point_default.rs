//! `graphmind break clear --point before` clears a breakpoint set without `--point` (an
//! absent point is `before`, as the list shows it), and setting it again with the point
//! spelled out adds nothing; the app is told with the matcher as it was stored.

mod support;

use serde_json::json;
use support::{App, block_on, gm_on, hub};

#[test]
fn break_clear_with_point_before_clears_a_breakpoint_set_without_a_point() {
    let h = hub(|c| {
        c.breakpoints.clear();
        c.allow_control = graphmind_hub::AllowControl::Resume;
    });
    block_on(async {
        let mut app = App::connect(h.port).await;
        gm_on(
            &h,
            &["break", "set", "--kind", "tool", "--name", "get_weather"],
        )
        .await
        .expect(0);
        let out = gm_on(
            &h,
            &[
                "break",
                "set",
                "--kind",
                "tool",
                "--name",
                "get_weather",
                "--point",
                "before",
                "--json",
            ],
        )
        .await
        .expect(0);
        assert_eq!(
            out.json()["breakpoints"],
            json!([{"kind": "tool", "name": "get_weather"}]),
            "the same breakpoint spelled with its default point adds nothing"
        );

        let out = gm_on(
            &h,
            &[
                "break",
                "clear",
                "--kind",
                "tool",
                "--name",
                "get_weather",
                "--point",
                "before",
                "--json",
            ],
        )
        .await
        .expect(0);
        assert_eq!(out.json()["breakpoints"], json!([]), "cleared");
        let f = app
            .peer
            .until(5000, |v| v["type"] == "breakpoint.clear")
            .await;
        assert_eq!(
            f["payload"]["matcher"],
            json!({"kind": "tool", "name": "get_weather"}),
            "the app clears the rule it was given"
        );
    });
    assert_eq!(h.get_json("/api/debug")["breakpoints"], json!([]));
}
