//! The hub listens on the loopback interface only: its listening socket, as the kernel lists
//! it, is bound to 127.0.0.1 and not to a wildcard or another address.

mod support;

use support::*;

/// The local addresses of the TCP sockets listening on `port`, from `/proc/net/tcp{,6}`
/// (address as the kernel writes it: hex, little-endian for IPv4).
fn listening_on(port: u16) -> Vec<String> {
    let mut found = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let cols: Vec<&str> = line.split_whitespace().collect();
            // cols[1] = local "ADDR:PORT", cols[3] = state (0A = LISTEN)
            let (Some(local), Some(state)) = (cols.get(1), cols.get(3)) else {
                continue;
            };
            let Some((addr, p)) = local.rsplit_once(':') else {
                continue;
            };
            if *state == "0A" && u16::from_str_radix(p, 16).ok() == Some(port) {
                found.push(addr.to_owned());
            }
        }
    }
    found
}

#[test]
fn the_hub_listens_on_127_0_0_1_only() {
    let h = hub(|_| {});
    let addrs = listening_on(h.port);
    // 127.0.0.1 in /proc/net/tcp's byte order
    assert_eq!(
        addrs,
        vec!["0100007F".to_owned()],
        "listening sockets on port {}",
        h.port
    );
    assert_eq!(h.health()["ok"], serde_json::json!(true));
}
