//! `result = true` marks a `Result` written under another name; `io::Result` needs nothing.

#[derive(Debug)]
pub struct LookupError;

impl std::fmt::Display for LookupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("not found")
    }
}

pub type Res<T> = Result<T, LookupError>;

#[graphmind::tool(result = true)]
async fn lookup(id: u32) -> Res<u32> {
    if id == 0 { Err(LookupError) } else { Ok(id) }
}

#[graphmind::tool]
async fn read(path: String) -> std::io::Result<String> {
    std::fs::read_to_string(path)
}

fn main() {
    let _ = lookup(1);
    let _ = read(String::new());
}
