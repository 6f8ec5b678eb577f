#[graphmind::model_step(stream = maybe)]
async fn complete(prompt: String) -> String {
    prompt
}

#[graphmind::tool(stream = "yes")]
async fn numbers(n: u32) -> u32 {
    n
}

fn main() {
    let _ = complete(String::new());
    let _ = numbers(1);
}
