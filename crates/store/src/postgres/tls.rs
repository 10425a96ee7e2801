//! TLS to PostgreSQL, as libpq's `sslmode` says it (rustls, the `ring` provider). The URL's `sslmode` and
//! `sslrootcert` are read here (tokio-postgres knows neither `verify-ca` nor `verify-full`):
//!
//! | sslmode | what happens |
//! |---|---|
//! | absent, `disable` | plain TCP (as before this module existed) |
//! | `prefer` | TLS when the server offers it, its certificate not checked (libpq's meaning) |
//! | `require` | TLS or no connection, its certificate not checked (with `sslrootcert`: checked as `verify-ca`) |
//! | `verify-ca` | TLS, the certificate chain checked against the roots, not the host name |
//! | `verify-full` | TLS, the chain and the host name checked |
//!
//! Roots: the PEM file `sslrootcert` names, else `EAI_CA_FILE`, else the system's trust store.

use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    ClientConfig, DigitallySignedStruct, Error as TlsError, RootCertStore, SignatureScheme,
};
use tokio_postgres::config::SslMode;
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::{Result, StoreError};

/// How connections reach the server.
#[derive(Clone)]
pub enum Connector {
    Plain,
    Tls(MakeRustlsConnect),
}

impl std::fmt::Debug for Connector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Connector::Plain => "Plain",
            Connector::Tls(_) => "Tls",
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verify {
    Nothing,
    Chain,
    Full,
}

fn bad(what: impl std::fmt::Display) -> StoreError {
    StoreError::Internal(format!("postgres: {what}"))
}

/// The URL without `sslmode` and `sslrootcert`, and those two.
fn split_params(url: &str) -> (String, Option<String>, Option<String>) {
    let Some((base, query)) = url.split_once('?') else {
        return (url.to_string(), None, None);
    };
    let (mut mode, mut root) = (None, None);
    let rest: Vec<&str> = query
        .split('&')
        .filter(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            match k {
                "sslmode" => {
                    mode = Some(v.to_string());
                    false
                }
                "sslrootcert" => {
                    root = Some(v.to_string());
                    false
                }
                _ => !kv.is_empty(),
            }
        })
        .collect();
    let url = if rest.is_empty() {
        base.to_string()
    } else {
        format!("{base}?{}", rest.join("&"))
    };
    (url, mode, root)
}

/// Parses a `postgres://` URL into the driver's configuration and the connector its `sslmode` asks for.
pub fn parse(url: &str) -> Result<(tokio_postgres::Config, Connector)> {
    let (rest, mode, root) = split_params(url);
    let mut cfg = tokio_postgres::Config::from_str(&rest)
        .map_err(|e| bad(format_args!("the database URL does not parse: {e}")))?;
    let (ssl, verify) = match mode.as_deref() {
        None | Some("disable") => {
            cfg.ssl_mode(SslMode::Disable);
            return Ok((cfg, Connector::Plain));
        }
        Some("prefer" | "allow") => (SslMode::Prefer, Verify::Nothing),
        Some("require") if root.is_some() => (SslMode::Require, Verify::Chain),
        Some("require") => (SslMode::Require, Verify::Nothing),
        Some("verify-ca") => (SslMode::Require, Verify::Chain),
        Some("verify-full") => (SslMode::Require, Verify::Full),
        Some(other) => {
            return Err(bad(format_args!(
                "sslmode={other} is not one of disable, prefer, require, verify-ca, verify-full"
            )))
        }
    };
    cfg.ssl_mode(ssl);
    let roots = roots(root.as_deref())?;
    let tls = client_config(roots, verify)?;
    Ok((cfg, Connector::Tls(MakeRustlsConnect::new(tls))))
}

/// Trusted roots: a PEM file (`sslrootcert`, else `EAI_CA_FILE`), else the system's.
fn roots(file: Option<&str>) -> Result<RootCertStore> {
    let mut store = RootCertStore::empty();
    let file = file
        .map(str::to_string)
        .or_else(|| std::env::var("EAI_CA_FILE").ok().filter(|s| !s.is_empty()));
    match file {
        Some(path) => {
            for c in pem_certs(Path::new(&path))? {
                store
                    .add(c)
                    .map_err(|e| bad(format_args!("a certificate of {path} is not usable: {e}")))?;
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            for c in found.certs {
                let _ = store.add(c);
            }
        }
    }
    Ok(store)
}

/// The certificates of a PEM file.
pub fn pem_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>> {
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| bad(format_args!("cannot read {}: {e}", path.display())))?
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| bad(format_args!("{} is not PEM: {e}", path.display())))?;
    if certs.is_empty() {
        return Err(bad(format_args!("{} holds no certificate", path.display())));
    }
    Ok(certs)
}

fn client_config(roots: RootCertStore, verify: Verify) -> Result<ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| bad(format_args!("TLS: {e}")))?;
    let config = match verify {
        Verify::Full => builder.with_root_certificates(roots).with_no_client_auth(),
        Verify::Chain | Verify::Nothing => {
            let inner = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|e| bad(format_args!("TLS roots: {e}")))?;
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(Lenient {
                    inner,
                    chain: verify == Verify::Chain,
                }))
                .with_no_client_auth()
        }
    };
    Ok(config)
}

/// libpq's weaker modes: `verify-ca` checks the chain but not the name; `require`/`prefer` check nothing (the
/// handshake's signatures are still verified, so the connection is encrypted to whoever holds the key).
#[derive(Debug)]
struct Lenient {
    inner: Arc<WebPkiServerVerifier>,
    chain: bool,
}

impl ServerCertVerifier for Lenient {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, TlsError> {
        if !self.chain {
            return Ok(ServerCertVerified::assertion());
        }
        match self
            .inner
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            Err(TlsError::InvalidCertificate(rustls::CertificateError::NotValidForName))
            | Err(TlsError::InvalidCertificate(
                rustls::CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, TlsError> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, TlsError> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sslmode_and_sslrootcert_are_taken_out_of_the_url() {
        let (u, m, r) = split_params(
            "postgres://u@h/db?sslmode=verify-full&application_name=x&sslrootcert=/ca.pem",
        );
        assert_eq!(u, "postgres://u@h/db?application_name=x");
        assert_eq!(m.as_deref(), Some("verify-full"));
        assert_eq!(r.as_deref(), Some("/ca.pem"));
        let (u, m, _) = split_params("postgres://u@h/db");
        assert_eq!((u.as_str(), m), ("postgres://u@h/db", None));
    }

    #[test]
    fn a_multi_host_url_keeps_its_hosts_and_target_session_attrs() {
        use tokio_postgres::config::{Host, TargetSessionAttrs};
        let (cfg, c) = parse(
            "postgres://u@127.0.0.1:5433,127.0.0.1:5434/db?target_session_attrs=read-write&sslmode=disable",
        )
        .expect("parses");
        assert!(matches!(c, Connector::Plain));
        assert_eq!(
            cfg.get_hosts(),
            &[Host::Tcp("127.0.0.1".into()), Host::Tcp("127.0.0.1".into())]
        );
        assert_eq!(cfg.get_ports(), &[5433, 5434]);
        assert_eq!(
            cfg.get_target_session_attrs(),
            TargetSessionAttrs::ReadWrite
        );
        assert_eq!(cfg.get_dbname(), Some("db"));
        assert_eq!(
            super::super::target_of(&cfg),
            "u@127.0.0.1:5433,127.0.0.1:5434/db"
        );
        let (cfg, c) =
            parse("postgres://u@a,b:6000/db?sslmode=require&target_session_attrs=read-write")
                .expect("parses");
        assert!(matches!(c, Connector::Tls(_)));
        assert_eq!(
            cfg.get_target_session_attrs(),
            TargetSessionAttrs::ReadWrite
        );
        assert_eq!(super::super::target_of(&cfg), "u@a:5432,b:6000/db");
    }

    #[test]
    fn modes_pick_a_connector() {
        assert!(matches!(
            parse("postgres://u@h/db").expect("plain").1,
            Connector::Plain
        ));
        assert!(matches!(
            parse("postgres://u@h/db?sslmode=disable").expect("plain").1,
            Connector::Plain
        ));
        assert!(matches!(
            parse("postgres://u@h/db?sslmode=require").expect("tls").1,
            Connector::Tls(_)
        ));
        let e = parse("postgres://u@h/db?sslmode=sometimes").expect_err("unknown");
        assert!(e.to_string().contains("sslmode=sometimes"), "{e}");
        let e = parse("postgres://u@h/db?sslmode=verify-full&sslrootcert=/nonexistent/ca.pem")
            .expect_err("missing file");
        assert!(e.to_string().contains("/nonexistent/ca.pem"), "{e}");
    }
}
