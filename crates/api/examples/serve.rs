//! The smallest `serve`: configuration from `EAI_*`, run until Ctrl-C. What the CLI's `serve` command wires up.
//!
//!     EAI_LISTEN=127.0.0.1:8080 EAI_DATA_DIR=./eai-gpu-data cargo run -p eai-api --example serve

use eai_api::{Application, Config};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let config = Config::from_env()?;
    let app = Application::build(config).await?;
    println!("listening on http://{}", app.local_addr());
    app.run_until_stopped(async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await
}
