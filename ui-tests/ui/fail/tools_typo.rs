#[graphmind::tool]
async fn get_weather(city: String) -> String {
    city
}

#[graphmind::model_step(tools = [get_wether])]
async fn call_model(prompt: String) -> String {
    prompt
}

fn main() {
    let _ = (get_weather(String::new()), call_model(String::new()));
}
