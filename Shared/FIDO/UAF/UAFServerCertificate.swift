import Crypto
import FoundationEssentials
import Platform

/// A TLS server certificate that UAF clients see, in the two forms a client may put into
/// FinalChallengeParams' `channelBinding` (UAF Protocol v1.2 §3.1.8 `ChannelBinding`):
/// `tlsServerCertificate`, base64url of the DER certificate, and `serverEndPoint`, base64url
/// of its hash as RFC 5929 §4.1 (`tls-server-end-point`) defines it.
///
/// Behind a gateway that terminates TLS the services never see the connection, so they are
/// told which certificate(s) the gateway presents (`SIGNET_UAF_TLS_SERVER_CERTIFICATES`, a PEM
/// file; several during a rotation) and compare what the client sent with those
/// (``UAFResponseContext/serverCertificates``).
public struct UAFServerCertificate: Sendable, Hashable {
    /// base64url of the DER certificate.
    public let tlsServerCertificate: String
    /// base64url of the certificate's hash (RFC 5929 §4.1); nil when that binding is undefined
    /// for the certificate (a signature algorithm with no single hash: Ed25519, RSASSA-PSS).
    public let serverEndPoint: String?

    public init(_ certificate: X509Certificate) {
        tlsServerCertificate = Base64URL.encode(certificate.derEncoded)
        serverEndPoint = Self.endPointDigest(signatureAlgorithmOID: certificate.signatureAlgorithmOID).map {
            Base64URL.encode($0.hash(certificate.derEncoded))
        }
    }

    /// RFC 5929 §4.1: the hash of the certificate's signatureAlgorithm, SHA-256 instead of MD5 or
    /// SHA-1; undefined (nil) for an algorithm with no single hash function.
    static func endPointDigest(signatureAlgorithmOID oid: String) -> AttestationDigest? {
        switch oid {
        case "1.2.840.113549.1.1.4", "1.2.840.113549.1.1.5", "1.2.840.10045.4.1",  // MD5/SHA-1 with RSA, ECDSA with SHA-1
            "1.2.840.113549.1.1.11", "1.2.840.10045.4.3.2":  // SHA-256 with RSA, ECDSA
            .sha256
        case "1.2.840.113549.1.1.12", "1.2.840.10045.4.3.3": .sha384
        case "1.2.840.113549.1.1.13", "1.2.840.10045.4.3.4": .sha512
        default: nil
        }
    }

    /// The certificates of a PEM file (one or more `CERTIFICATE` blocks).
    ///
    /// - Throws: `CryptoError` when the file cannot be read or holds no certificate.
    public static func load(pemFile path: String) throws -> [UAFServerCertificate] {
        guard let text = FileManager.default.contents(atPath: path).map({ String(decoding: $0, as: UTF8.self) }) else {
            throw CryptoError("cannot read the TLS server certificate file")
        }
        let certificates = try X509Certificate.certificates(fromPEM: text)
        guard !certificates.isEmpty else { throw CryptoError("the TLS server certificate file holds no certificate") }
        return certificates.map(UAFServerCertificate.init)
    }

    /// `SIGNET_UAF_TLS_SERVER_CERTIFICATES`: the path of a PEM file with the certificate(s)
    /// the TLS server that UAF clients reach presents (the gateway's leaf; several during a
    /// rotation). Unset or empty: none, and channel binding's certificate values are not
    /// compared. The registration and authentication services read it.
    ///
    /// - Throws: `Environment.ConfigurationError` naming the variable when the file cannot be
    ///   read or holds no certificate (start-up stops rather than silently not checking).
    public static func fromEnvironment(_ env: Environment) throws -> [UAFServerCertificate] {
        let variable = "SIGNET_UAF_TLS_SERVER_CERTIFICATES"
        guard let path = env.optionalString(variable), !path.isEmpty else { return [] }
        do { return try load(pemFile: path) } catch {
            throw Environment.ConfigurationError(variable: variable, reason: "expected the path of a PEM file of certificates: \(error)")
        }
    }
}
