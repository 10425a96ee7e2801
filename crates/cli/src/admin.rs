//! Store administration without the server: API keys, the audit chain, migrations.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand};
use eai_api::{hash_api_key, new_api_key, open_store};
use eai_engine::TenantId;
use eai_store::{AuditDraft, Role};

#[derive(Debug, Args)]
pub struct StoreArgs {
    /// Folder of the embedded store (EAI_DATA_DIR; default ./eai-gpu-data).
    #[arg(long, global = true)]
    pub data_dir: Option<PathBuf>,
    /// Store URL (EAI_DATABASE_URL).
    #[arg(long, global = true)]
    pub database_url: Option<String>,
}

#[derive(Debug, Args)]
pub struct KeysArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    #[command(subcommand)]
    pub command: KeysCommand,
}

#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Create an API key and print it (once).
    Create {
        /// platform_admin, finops, tenant_admin, auditor, developer, viewer, security_officer or sampler.
        #[arg(long)]
        role: String,
        /// The tenant (uuid); required for every role but platform_admin and sampler.
        #[arg(long)]
        tenant: Option<String>,
        #[arg(long)]
        name: Option<String>,
    },
}

#[derive(Debug, Args)]
pub struct AuditArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    #[command(subcommand)]
    pub command: AuditCommand,
}

#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Walk the hash chain; exit 1 and name the first broken link if any.
    Verify,
}

async fn store(args: &StoreArgs) -> anyhow::Result<std::sync::Arc<dyn eai_store::Store>> {
    let config = crate::serve::config(None, args.data_dir.clone(), args.database_url.clone())?;
    open_store(&config).await
}

pub async fn migrate(args: StoreArgs) -> anyhow::Result<ExitCode> {
    let s = store(&args).await?;
    s.ping().await.context("the store does not answer")?;
    println!("{} store is at the current schema", s.backend());
    Ok(ExitCode::SUCCESS)
}

pub async fn keys(args: KeysArgs) -> anyhow::Result<ExitCode> {
    let s = store(&args.store).await?;
    match args.command {
        KeysCommand::Create { role, tenant, name } => {
            let role = Role::parse(&role).with_context(|| {
                let all: Vec<&str> = Role::ALL.iter().map(|r| r.as_str()).collect();
                format!("--role must be one of {}", all.join(", "))
            })?;
            let tenant: Option<TenantId> = tenant
                .map(|t| {
                    t.parse().map_err(|e: eai_engine::FieldError| {
                        anyhow::anyhow!("--tenant {}", e.reason)
                    })
                })
                .transpose()?;
            if tenant.is_none() && !matches!(role, Role::PlatformAdmin | Role::Sampler) {
                anyhow::bail!("--tenant is required for the role {}", role.as_str());
            }
            let key = new_api_key();
            let at = eai_api::state::now();
            let rec = s
                .create_api_key(&hash_api_key(&key), role, tenant, name.as_deref(), at)
                .await?;
            s.append_audit(&AuditDraft {
                occurred_at: at,
                actor: "cli".into(),
                actor_role: None,
                tenant_id: tenant,
                action: "api_key.create".into(),
                decision: "allow".into(),
                resource: Some(rec.id.clone()),
                request_id: None,
                details: serde_json::json!({ "role": role.as_str(), "via": "eai-gpu keys create" }),
            })
            .await?;
            println!("id:     {}", rec.id);
            println!("role:   {}", role.as_str());
            if let Some(t) = tenant {
                println!("tenant: {t}");
            }
            println!("key:    {key}");
            eprintln!("This key is shown once: store it now.");
            Ok(ExitCode::SUCCESS)
        }
    }
}

pub async fn audit(args: AuditArgs) -> anyhow::Result<ExitCode> {
    let s = store(&args.store).await?;
    match args.command {
        AuditCommand::Verify => match s.verify_audit_chain().await? {
            None => {
                let n = s
                    .audit_events(eai_store::Scope::Platform, 0, u64::MAX)
                    .await?
                    .len();
                println!("audit chain intact: {n} events");
                Ok(ExitCode::SUCCESS)
            }
            Some(b) => {
                println!("audit chain BROKEN at event {}: {}", b.seq, b.reason);
                Ok(ExitCode::from(1))
            }
        },
    }
}
