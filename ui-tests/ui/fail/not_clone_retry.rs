#[derive(serde::Serialize)]
pub struct Query {
    pub text: String,
}

#[graphmind::tool]
async fn search(query: Query) -> Vec<String> {
    vec![query.text]
}

#[graphmind::tool(retry = false)]
async fn search_once(query: Query) -> Vec<String> {
    vec![query.text]
}

fn main() {
    let _ = search(Query { text: String::new() });
    let _ = search_once(Query { text: String::new() });
}
