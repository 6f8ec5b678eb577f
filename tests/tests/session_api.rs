//! The session API: stats, dispose, the process default, wait-for-attach.

use std::time::{Duration, Instant};

use graphmind_tests::{FakeDebugger, eventually, frame, token_event};

const SECOND: Duration = Duration::from_secs(1);

#[tokio::test]
async fn stats_count_buffered_events_seqs_and_attachment() {
    let hub = FakeDebugger::start().await;
    let gm = graphmind::Session::new(hub.config("stats"));
    let s = gm.stats();
    assert!(s.enabled && !s.attached);
    assert_eq!(
        (s.buffered, s.dropped, s.held_gates, s.last_seq),
        (0, 0, 0, None)
    );

    for i in 0..3 {
        assert_eq!(gm.emit("run_s", token_event("llm:step", "x")), Some(i));
    }
    let s = gm.stats();
    assert_eq!((s.buffered, s.last_seq), (3, Some(2)));

    assert!(gm.ready(2 * SECOND).await);
    let s = gm.stats();
    assert!(s.attached);
    assert_eq!(s.buffered, 3, "sent events stay in the ring for replay");
    assert_eq!(s.last_seq, Some(3), "hello took seq 3");
    assert_eq!(gm.emit("run_s", token_event("llm:step", "y")), Some(4));
    hub.wait_match(&frame("node.token").seq(4), SECOND).await;
    gm.dispose().await;
    let s = gm.stats();
    assert!(!s.enabled && !s.attached);
}

#[tokio::test]
async fn dispose_flushes_closes_with_1000_and_is_final() {
    let hub = FakeDebugger::start().await;
    let gm = graphmind::Session::new(hub.config("dispose"));
    assert!(gm.ready(2 * SECOND).await);
    for i in 0..200 {
        gm.emit("run_d", token_event("llm:step", &format!("{i}")));
    }
    let t = Instant::now();
    gm.dispose().await;
    assert!(t.elapsed() < SECOND, "dispose took {:?}", t.elapsed());
    // Everything queued before dispose arrived, then a normal close.
    let seen = hub.wait_count("node.token", 200, SECOND).await;
    assert_eq!(seen.len(), 200, "node.token");
    let frames = hub.frames();
    assert_eq!(frames.last().map(|f| f.seq()), Some(200));
    eventually("a close frame", SECOND, || !hub.closes().is_empty()).await;
    assert_eq!(hub.closes(), vec![(1, Some(1000))]);

    assert!(!gm.ready(SECOND).await);
    assert_eq!(gm.emit("run_d", token_event("llm:step", "late")), None);
    gm.dispose().await; // idempotent
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(hub.connections(), 1, "a disposed session reconnected");
}

#[tokio::test]
async fn dispose_wakes_pending_ready_calls_with_false() {
    let hub = FakeDebugger::start().await;
    hub.set_handshake(graphmind_tests::Handshake::Never);
    let gm = graphmind::Session::new(hub.config("dispose-ready"));
    let waiter = {
        let gm = gm.clone();
        tokio::spawn(async move { gm.ready(Duration::from_secs(10)).await })
    };
    hub.wait_for_kind("hello", SECOND).await;
    let t = Instant::now();
    gm.dispose().await;
    assert!(!waiter.await.expect("joined"));
    // The handshake under way gets a 200 ms grace (so a short program's events still go out),
    // not its whole 1 s budget.
    // The bound sits below that 1 s budget with room for a loaded machine.
    assert!(
        t.elapsed() < Duration::from_millis(950),
        "dispose waited {:?} for a handshake that never comes",
        t.elapsed()
    );
}

#[tokio::test]
async fn dispose_right_after_a_short_run_still_delivers_it() {
    // A short program: no `ready`, one run, then dispose at once — while the first
    // connection is still being set up.
    let hub = FakeDebugger::start().await;
    let gm = graphmind::Session::new(hub.config("short-program"));
    let out = gm.run("quick", async { 42 }).await.expect("not aborted");
    assert_eq!(out, 42);
    assert!(!gm.is_attached(), "the connection is still on its way");
    gm.dispose().await;
    hub.wait_for_kind("run.finished", SECOND).await;
    let frames = hub.frames();
    let kinds: Vec<&str> = frames.iter().map(graphmind_tests::Frame::kind).collect();
    assert_eq!(
        kinds,
        [
            "hello",
            "run.started",
            "node.started",
            "node.finished",
            "run.finished"
        ]
    );
    eventually("a normal close", SECOND, || !hub.closes().is_empty()).await;
    assert_eq!(hub.closes(), vec![(1, Some(1000))]);
    assert!(!gm.ready(SECOND).await, "disposed");
    hub.assert_valid();
}

#[tokio::test]
async fn dropping_the_last_handle_closes_the_connection() {
    let hub = FakeDebugger::start().await;
    let gm = graphmind::Session::new(hub.config("drop"));
    assert!(gm.ready(2 * SECOND).await);
    drop(gm);
    eventually("the socket to close", 2 * SECOND, || {
        hub.open_connections() == 0
    })
    .await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(hub.connections(), 1);
}

#[tokio::test]
async fn wait_for_attach_makes_the_first_use_wait_for_the_debugger() {
    let hub = FakeDebugger::start().await;
    let gm = graphmind::Session::new(hub.config("waits").wait_for_attach(2 * SECOND));
    let attached_inside = gm
        .run("first-run", {
            let gm = gm.clone();
            async move { gm.is_attached() }
        })
        .await
        .expect("not aborted");
    assert!(
        attached_inside,
        "the first run started before the debugger attached"
    );
    gm.dispose().await;

    // Without it, the first use does not wait.
    let gm = graphmind::Session::new(hub.config("no-wait"));
    let t = Instant::now();
    gm.run("first-run", async {}).await.expect("not aborted");
    assert!(t.elapsed() < SECOND, "{:?}", t.elapsed());
    gm.dispose().await;
}

#[tokio::test]
async fn wait_for_attach_gives_up_after_its_budget() {
    let hub = FakeDebugger::start().await;
    hub.set_handshake(graphmind_tests::Handshake::Never);
    let gm = graphmind::Session::new(
        hub.config("waits-in-vain")
            .wait_for_attach(Duration::from_millis(800)),
    );
    let t = Instant::now();
    gm.run("first", async {}).await.expect("not aborted");
    let first = t.elapsed();
    // Bounds a loaded 2-core machine meets: it waited its budget (below the handshake's own
    // 1 s, whose failure would also end the wait), and then gave up.
    assert!(
        first >= Duration::from_millis(750) && first < Duration::from_millis(3000),
        "{first:?}"
    );
    let t = Instant::now();
    gm.run("second", async {}).await.expect("not aborted");
    assert!(
        t.elapsed() < Duration::from_millis(700),
        "only the first use waits"
    );
    gm.dispose().await;
}

#[tokio::test]
async fn init_sets_the_process_default() {
    let hub = FakeDebugger::start().await;
    let gm = graphmind::init(hub.config("the-default"));
    let again = graphmind::session();
    assert_eq!(again.config().app(), "the-default");
    assert_eq!(again.url(), hub.url());
    assert!(again.ready(2 * SECOND).await);
    assert!(gm.is_attached(), "clones share one state");
    let replaced = graphmind::init(hub.config("second-default"));
    assert_eq!(graphmind::session().config().app(), "second-default");
    gm.dispose().await;
    replaced.dispose().await;
}

#[tokio::test]
async fn ready_works_on_an_executor_without_timers() {
    let hub = FakeDebugger::start().await;
    let gm = graphmind::Session::new(hub.config("no-timers"));
    let caller = {
        let gm = gm.clone();
        std::thread::spawn(move || {
            // A runtime with neither timers nor IO: ready() must still time out and attach.
            let rt = tokio::runtime::Builder::new_current_thread()
                .build()
                .expect("runtime");
            rt.block_on(gm.ready(2 * SECOND))
        })
    };
    let attached = tokio::task::spawn_blocking(move || caller.join().expect("joined"))
        .await
        .expect("joined");
    assert!(attached);
    gm.dispose().await;

    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let nobody = graphmind::Session::new(
        graphmind::Config::new("no-timers-nobody")
            .url(format!("ws://127.0.0.1:{port}/ingest"))
            .env_vars(std::iter::empty::<(String, String)>()),
    );
    let t = Instant::now();
    let attached = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        rt.block_on(nobody.ready(Duration::from_millis(200)))
    })
    .join()
    .expect("joined");
    assert!(!attached);
    assert!(t.elapsed() < SECOND, "ready(200ms) took {:?}", t.elapsed());
}

#[tokio::test]
async fn dispose_does_not_wait_out_a_hung_debugger() {
    let hub = FakeDebugger::start().await;
    let gm = graphmind::Session::new(hub.config("dispose-hung"));
    assert!(gm.ready(2 * SECOND).await);
    hub.freeze(true);
    // Enough to fill the socket buffers, so the transport is stuck in a write.
    let payload = "w".repeat(4096);
    for _ in 0..3000 {
        gm.emit("run_h", token_event("llm:step", &payload));
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let t = Instant::now();
    gm.dispose().await;
    // Far below the 3 s liveness budget it would otherwise wait out, with room for load.
    assert!(
        t.elapsed() < 2 * SECOND,
        "dispose took {:?} with a hung debugger",
        t.elapsed()
    );
    assert!(!gm.stats().enabled);
}
