//! `graphmind resume <pauseId>` without `--run`: the run is the one whose open pause has that
//! id (pause ids are unique); a pause that is not open is gone (exit 4) and says how to name
//! its run. Before, `--run` was required although the pause id alone names the pause.

mod support;

use serde_json::json;
use support::*;

#[test]
fn resume_without_run_finds_the_run_of_the_open_pause() {
    let h = hub(|c| c.allow_control = graphmind_hub::AllowControl::Resume);
    let run = "run_n0run0000001";
    block_on(async {
        let mut app = App::running(h.port, run, "no-run-flag").await;
        app.pause_at(run, "lookup", "pause_n_1", "before", json!({"q": 1}))
            .await;
        wait_for_pause(h.port).await;
        let port = h.port.to_string();
        let resume = tokio::spawn(gm_async(
            h.home.clone(),
            args(&[
                "resume",
                "pause_n_1",
                "--action",
                "continue",
                "--port",
                &port,
            ]),
        ));
        let frame = app.expect_resume(10_000).await;
        assert_eq!(frame["runId"], json!(run), "{frame}");
        assert_eq!(frame["payload"]["pauseId"], json!("pause_n_1"));
        app.confirm(run, "pause_n_1", "continue").await;
        let out = resume.await.expect("joined").expect(0);
        assert_eq!(
            out.stdout,
            format!("resumed pause_n_1 of run {run} (continue)\n")
        );

        let out = gm_on(&h, &["resume", "pause_n_9", "--action", "continue"])
            .await
            .expect(4);
        let line = out.one_line_error();
        assert!(
            line.contains("no open pause pause_n_9") && line.contains("--run"),
            "{line}"
        );
    });
}
