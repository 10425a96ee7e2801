//! Store administration without the server: API keys, the audit chain, migrations.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand};
use eai_api::{hash_api_key, new_api_key, open_store};
use eai_app::keys::{key_request_full, key_view};
use eai_store::{AuditDraft, AuditHead, NewSecret, Scope};

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
        /// platform_admin, finops, tenant_admin, auditor, developer, viewer, security_officer, sampler or
        /// usage_reporter.
        #[arg(long)]
        role: String,
        /// The tenant (uuid); required for every role but platform_admin, sampler and usage_reporter.
        #[arg(long)]
        tenant: Option<String>,
        #[arg(long)]
        name: Option<String>,
        /// After this instant (a date or RFC 3339) the key is refused.
        #[arg(long)]
        expires_at: Option<String>,
        /// A sampler key may only post samples of these nodes (repeat the flag, or separate with commas).
        #[arg(long, value_delimiter = ',')]
        node: Vec<String>,
    },
    /// List the keys (never their secrets).
    List {
        /// Print JSON, as `GET /v1/auth/api-keys` answers.
        #[arg(long)]
        json: bool,
    },
    /// Revoke a key (`key_<n>`): the next call with it gets 401.
    Revoke { id: String },
    /// Give a key a new secret (printed once); the old one keeps working `--grace` more (e.g. 10m, 1h; 0 default).
    Rotate {
        id: String,
        #[arg(long, default_value = "0s")]
        grace: String,
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
    Verify {
        /// A head anchored earlier (`GET /v1/audit/head`, the logs or `/metrics`) as SEQ:HASH: the chain must
        /// still hold it (a cut tail or a recomputed chain fails).
        #[arg(long)]
        expect_head: Option<String>,
    },
    /// Print the chain's head as SEQ:HASH (what to anchor outside the database).
    Head,
}

/// `SEQ:HASH` as `--expect-head` takes it.
pub fn parse_head(s: &str) -> anyhow::Result<AuditHead> {
    let (seq, hash) = s
        .trim()
        .split_once(':')
        .context("--expect-head must be SEQ:HASH, as `eai-gpu audit head` prints it")?;
    let seq: u64 = seq
        .parse()
        .with_context(|| format!("--expect-head: `{seq}` is not a sequence number"))?;
    if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
        anyhow::bail!("--expect-head: the hash must be 64 hex digits");
    }
    Ok(AuditHead {
        seq,
        hash: hash.to_ascii_lowercase(),
    })
}

/// A duration like `90s`, `10m`, `1h`, `2d` (or plain seconds).
fn parse_grace(s: &str) -> anyhow::Result<u64> {
    let s = s.trim();
    let (n, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: u64 = n
        .parse()
        .with_context(|| format!("--grace `{s}` is not a duration like 10m"))?;
    let mult = match unit {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => anyhow::bail!("--grace `{s}`: use s, m, h or d"),
    };
    Ok(n * mult)
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

/// What the command records in the audit chain.
fn cli_audit(action: &str, resource: Option<String>, details: serde_json::Value) -> AuditDraft {
    let mut d = AuditDraft::system("cli", action, eai_app::clock::now(), details);
    d.resource = resource;
    d
}

pub async fn keys(args: KeysArgs) -> anyhow::Result<ExitCode> {
    let s = store(&args.store).await?;
    let at = eai_app::clock::now();
    match args.command {
        KeysCommand::Create {
            role,
            tenant,
            name,
            expires_at,
            node,
        } => {
            let nodes = (!node.is_empty()).then_some(node);
            let req = key_request_full(
                Some(&role),
                tenant.as_deref(),
                name.as_deref(),
                expires_at.as_deref(),
                nodes.as_deref(),
                at,
            )
            .map_err(|errors| {
                let flag = |field: &str| match field {
                    "tenant_id" => "--tenant",
                    "nodes" => "--node",
                    "expires_at" => "--expires-at",
                    "name" => "--name",
                    _ => "--role",
                };
                let why: Vec<String> = errors
                    .iter()
                    .map(|e| format!("{} {}", flag(&e.field), e.reason))
                    .collect();
                anyhow::anyhow!("{}", why.join("; "))
            })?;
            let key = new_api_key();
            let audit = cli_audit(
                "api_key.create",
                None,
                serde_json::json!({ "role": req.role.as_str(), "via": "eai-gpu keys create" }),
            );
            let new = req.into_new_key(hash_api_key(&key), at);
            let rec = s.create_api_key(&new, &audit).await?;
            println!("id:     {}", rec.id);
            println!("role:   {}", rec.role.as_str());
            if let Some(t) = rec.tenant_id {
                println!("tenant: {t}");
            }
            if let Some(e) = rec.expires_at {
                println!("expires: {e}");
            }
            if !rec.nodes.is_empty() {
                println!("nodes:  {}", rec.nodes.join(", "));
            }
            println!("key:    {key}");
            eprintln!("This key is shown once: store it now.");
            Ok(ExitCode::SUCCESS)
        }
        KeysCommand::List { json } => {
            let keys = s.api_keys(Scope::Platform).await?;
            if json {
                let items: Vec<serde_json::Value> = keys.iter().map(|k| key_view(k, at)).collect();
                println!(
                    "{}",
                    serde_json::to_string_pretty(&serde_json::json!({ "items": items }))?
                );
                return Ok(ExitCode::SUCCESS);
            }
            println!(
                "{:<8} {:<16} {:<36} {:<8} {:<20} {:<20} NAME",
                "ID", "ROLE", "TENANT", "STATUS", "CREATED", "EXPIRES"
            );
            for k in &keys {
                let v = key_view(k, at);
                println!(
                    "{:<8} {:<16} {:<36} {:<8} {:<20} {:<20} {}",
                    k.id,
                    k.role.as_str(),
                    k.tenant_id
                        .map(|t| t.to_string())
                        .unwrap_or_else(|| "-".into()),
                    v["status"].as_str().unwrap_or("-"),
                    k.created_at.to_string(),
                    k.expires_at
                        .map(|t| t.to_string())
                        .unwrap_or_else(|| "-".into()),
                    k.name.as_deref().unwrap_or("-"),
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        KeysCommand::Revoke { id } => {
            let audit = cli_audit(
                "api_key.revoke",
                Some(id.clone()),
                serde_json::json!({ "via": "eai-gpu keys revoke" }),
            );
            let rec = s.revoke_api_key(Scope::Platform, &id, at, &audit).await?;
            println!("{} revoked at {}", rec.id, rec.revoked_at.unwrap_or(at));
            Ok(ExitCode::SUCCESS)
        }
        KeysCommand::Rotate { id, grace } => {
            let grace = parse_grace(&grace)?;
            let key = new_api_key();
            let until = eai_engine::time::Timestamp(
                at.0 + i64::try_from(grace).unwrap_or(i64::MAX / 2000) * 1000,
            );
            let audit = cli_audit(
                "api_key.rotate",
                Some(id.clone()),
                serde_json::json!({ "grace_seconds": grace, "via": "eai-gpu keys rotate" }),
            );
            let rec = s
                .rotate_api_key(
                    Scope::Platform,
                    &id,
                    &NewSecret {
                        hash: hash_api_key(&key),
                        at,
                        grace_until: until,
                    },
                    &audit,
                )
                .await?;
            println!("id:     {}", rec.id);
            if grace > 0 {
                println!("the old secret works until {until}");
            } else {
                println!("the old secret no longer works");
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
        AuditCommand::Verify { expect_head } => {
            let expect = expect_head.as_deref().map(parse_head).transpose()?;
            match s.verify_audit_chain(expect.as_ref()).await? {
                None => {
                    let head = s.audit_head().await?;
                    let n = head.as_ref().map_or(0, |h| h.seq);
                    match (&expect, head) {
                        (Some(e), _) => println!(
                            "audit chain intact: {n} events, and it still holds the anchored head {}:{}",
                            e.seq, e.hash
                        ),
                        (None, Some(h)) => println!(
                            "audit chain intact: {n} events; head {}:{} (anchor it outside the database)",
                            h.seq, h.hash
                        ),
                        (None, None) => println!("audit chain intact: no event yet"),
                    }
                    Ok(ExitCode::SUCCESS)
                }
                Some(b) => {
                    println!("audit chain BROKEN at event {}: {}", b.seq, b.reason);
                    Ok(ExitCode::from(1))
                }
            }
        }
        AuditCommand::Head => {
            match s.audit_head().await? {
                Some(h) => println!("{}:{}", h.seq, h.hash),
                None => println!("0:{}", eai_store::audit::GENESIS_HASH),
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
