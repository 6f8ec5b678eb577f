#[graphmind::tool(retry = true)]
async fn append(log: &mut Vec<String>, line: String) -> usize {
    log.push(line);
    log.len()
}

struct Counter(u32);

impl Counter {
    #[graphmind::tool(retry = true)]
    async fn bump(&mut self) -> u32 {
        self.0 += 1;
        self.0
    }
}

fn main() {
    let mut log = Vec::new();
    let _ = append(&mut log, String::new());
    let _ = Counter(0).bump();
}
