//! TLS for PostgreSQL connections, with libpq's `sslmode` meanings, on rustls (no system
//! library to link).
//!
//! | `sslmode` | encrypted | certificate checked |
//! |---|---|---|
//! | `disable` | never | - |
//! | `prefer` (default) | when the server offers it | no (chain only with `sslrootcert`) |
//! | `require` | always | no (chain only with `sslrootcert`) |
//! | `verify-ca` | always | chains to a trusted root |
//! | `verify-full` | always | chains to a trusted root and names the host |
//!
//! Trusted roots come from `sslrootcert` (a PEM file) when given, else from the system's store.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use postgres::tls::MakeTlsConnect;
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use tokio_postgres_rustls::MakeRustlsConnect;

/// How the server's certificate is checked, derived from `sslmode` and `sslrootcert`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verify {
    /// Encrypt, check nothing (libpq's `prefer` and `require` without `sslrootcert`).
    Nothing,
    /// The chain must reach a trusted root; the host name is not checked.
    Chain,
    /// The chain must reach a trusted root and the certificate must name the host.
    Full,
}

/// The TLS part of a database URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TlsSettings {
    /// Certificate checking.
    pub verify: Verify,
    /// `sslrootcert`: a PEM file of trusted roots.
    pub root_cert: Option<PathBuf>,
}

/// The TLS connector, accepting Unix-socket hosts too (the server never offers TLS on those,
/// but the client asks for a connector for every host, and a socket path is no server name).
#[derive(Clone)]
pub(crate) struct Connector(MakeRustlsConnect);

impl<S> MakeTlsConnect<S> for Connector
where
    MakeRustlsConnect: MakeTlsConnect<S>,
{
    type Stream = <MakeRustlsConnect as MakeTlsConnect<S>>::Stream;
    type TlsConnect = <MakeRustlsConnect as MakeTlsConnect<S>>::TlsConnect;
    type Error = <MakeRustlsConnect as MakeTlsConnect<S>>::Error;

    fn make_tls_connect(&mut self, domain: &str) -> Result<Self::TlsConnect, Self::Error> {
        let name = if domain.is_empty() || domain.starts_with('/') {
            "localhost"
        } else {
            domain
        };
        self.0.make_tls_connect(name)
    }
}

/// Builds the connector. Roots are loaded only when a check needs them, so a plain connection
/// pays nothing for TLS.
pub(crate) fn connector(settings: &TlsSettings) -> Result<Connector, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS set-up failed: {e}"))?;
    let config = match settings.verify {
        Verify::Nothing => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoCheck(
                provider.signature_verification_algorithms,
            )))
            .with_no_client_auth(),
        Verify::Chain | Verify::Full => {
            let roots = Arc::new(roots(settings.root_cert.as_deref())?);
            let webpki = WebPkiServerVerifier::builder_with_provider(roots, provider)
                .build()
                .map_err(|e| format!("TLS set-up failed: {e}"))?;
            let verifier: Arc<dyn ServerCertVerifier> = if settings.verify == Verify::Full {
                webpki
            } else {
                Arc::new(ChainOnly(webpki))
            };
            builder
                .dangerous()
                .with_custom_certificate_verifier(verifier)
                .with_no_client_auth()
        }
    };
    Ok(Connector(MakeRustlsConnect::new(config)))
}

fn roots(file: Option<&Path>) -> Result<RootCertStore, String> {
    let mut store = RootCertStore::empty();
    match file {
        Some(path) => {
            let certs = CertificateDer::pem_file_iter(path)
                .and_then(|it| it.collect::<Result<Vec<_>, _>>())
                .map_err(|e| format!("sslrootcert: cannot read {}: {e}", path.display()))?;
            let (added, _) = store.add_parsable_certificates(certs);
            if added == 0 {
                return Err(format!(
                    "sslrootcert: {} holds no usable PEM certificate",
                    path.display()
                ));
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            store.add_parsable_certificates(found.certs);
            if store.is_empty() {
                return Err(
                    "sslmode: no trusted root certificates found on this system; pass \
                     sslrootcert=/path/to/root.crt in the URL"
                        .into(),
                );
            }
        }
    }
    Ok(store)
}

/// Accepts any certificate but still checks the handshake signatures (libpq's `require`).
#[derive(Debug)]
struct NoCheck(WebPkiSupportedAlgorithms);

impl ServerCertVerifier for NoCheck {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_schemes()
    }
}

/// Checks the chain but not the host name (libpq's `verify-ca`).
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}
