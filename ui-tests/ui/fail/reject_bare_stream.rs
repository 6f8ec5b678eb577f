#[derive(Debug)]
pub struct E;

impl std::fmt::Display for E {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("e")
    }
}

impl From<graphmind::Rejection> for E {
    fn from(_: graphmind::Rejection) -> Self {
        E
    }
}

#[graphmind::tool(reject)]
async fn feed(n: u32) -> impl futures_util::Stream<Item = Result<u32, E>> {
    futures_util::stream::iter((0..n).map(Ok))
}

fn main() {
    let _ = feed(3);
}
