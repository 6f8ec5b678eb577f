//! `graphmind demo --help` says where the demo writes (`$GRAPHMIND_HOME`, default
//! `~/.graphmind`), as it does so also with `--port 0` and `--auto`.

mod support;

use support::{TempDir, gm};

#[test]
fn demo_help_says_it_writes_to_the_graphmind_home() {
    let home = TempDir::new("demo-help");
    let out = gm(&home.0, &["demo", "--help"]).expect(0);
    let help = out.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        help.contains(
            "stores its runs as `graphmind serve` does, also with `--port 0` or `--auto`"
        ),
        "{help}"
    );
    assert!(help.contains("~/.graphmind/graphmind.db"), "{help}");
    assert!(help.contains("GRAPHMIND_HOME=$(mktemp -d)"), "{help}");
}
