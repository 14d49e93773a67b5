import Crypto
import Tokens

extension MetadataBLOB {
    /// What a BLOB is verified against: the metadata root(s), the size limit and the
    /// signature algorithms accepted. Given by the service's configuration, never by the BLOB.
    public struct Configuration: Sendable {
        /// The metadata roots (for the FIDO Alliance's production MDS: GlobalSign Root CA – R3,
        /// ``fidoProductionRootPEM``).
        public var roots: [X509Certificate]
        /// Largest BLOB accepted, in bytes; checked before anything is decoded. Default 8 MiB
        /// (the production BLOB is a few MiB).
        public var maximumSize: Int
        /// Largest decoded JWS header accepted (it carries the x5c chain). Default 64 KiB.
        public var maximumHeaderSize: Int
        /// Signature algorithms accepted. The signing key's type narrows them further: a P-256
        /// leaf verifies ES256 only, whatever the header says.
        public var allowedAlgorithms: Set<JWSAlgorithm>
        /// Accept a chain that ends at a configured root that is not self-signed (pinning an
        /// intermediate, or the signing certificate itself). Off by default.
        public var allowPartialChain: Bool

        /// 8 MiB.
        public static let defaultMaximumSize = 8 * 1024 * 1024

        public init(
            roots: [X509Certificate], maximumSize: Int = defaultMaximumSize, maximumHeaderSize: Int = 64 * 1024,
            allowedAlgorithms: Set<JWSAlgorithm> = [.es256, .es384, .es512, .rs256, .rs384, .rs512, .ps256, .ps384, .ps512, .edDSA],
            allowPartialChain: Bool = false
        ) {
            self.roots = roots
            self.maximumSize = maximumSize
            self.maximumHeaderSize = maximumHeaderSize
            self.allowedAlgorithms = allowedAlgorithms
            self.allowPartialChain = allowPartialChain
        }

        /// A configuration trusting the FIDO Alliance production MDS3 root (GlobalSign Root CA –
        /// R3, ``fidoProductionRootPEM``), with the default limits.
        ///
        /// - Throws: ``CryptoError`` only if the embedded certificate failed to parse.
        public static func production() throws -> Configuration {
            Configuration(roots: [try X509Certificate(pem: fidoProductionRootPEM)])
        }

        /// GlobalSign Root CA – R3 (valid until 2029-03-18; SHA-256 fingerprint
        /// CB:B5:22:D7:B7:F1:27:AD:6A:01:13:86:5B:DF:1C:D4:10:2E:7D:07:59:AF:63:5A:7C:F4:72:0D:C9:63:C5:3B),
        /// the root of `https://mds3.fidoalliance.org/`'s signing chain.
        public static let fidoProductionRootPEM = """
            -----BEGIN CERTIFICATE-----
            MIIDXzCCAkegAwIBAgILBAAAAAABIVhTCKIwDQYJKoZIhvcNAQELBQAwTDEgMB4G
            A1UECxMXR2xvYmFsU2lnbiBSb290IENBIC0gUjMxEzARBgNVBAoTCkdsb2JhbFNp
            Z24xEzARBgNVBAMTCkdsb2JhbFNpZ24wHhcNMDkwMzE4MTAwMDAwWhcNMjkwMzE4
            MTAwMDAwWjBMMSAwHgYDVQQLExdHbG9iYWxTaWduIFJvb3QgQ0EgLSBSMzETMBEG
            A1UEChMKR2xvYmFsU2lnbjETMBEGA1UEAxMKR2xvYmFsU2lnbjCCASIwDQYJKoZI
            hvcNAQEBBQADggEPADCCAQoCggEBAMwldpB5BngiFvXAg7aEyiie/QV2EcWtiHL8
            RgJDx7KKnQRfJMsuS+FggkbhUqsMgUdwbN1k0ev1LKMPgj0MK66X17YUhhB5uzsT
            gHeMCOFJ0mpiLx9e+pZo34knlTifBtc+ycsmWQ1z3rDI6SYOgxXG71uL0gRgykmm
            KPZpO/bLyCiR5Z2KYVc3rHQU3HTgOu5yLy6c+9C7v/U9AOEGM+iCK65TpjoWc4zd
            QQ4gOsC0p6Hpsk+QLjJg6VfLuQSSaGjlOCZgdbKfd/+RFO+uIEn8rUAVSNECMWEZ
            XriX7613t2Saer9fwRPvm2L7DWzgVGkWqQPabumDk3F2xmmFghcCAwEAAaNCMEAw
            DgYDVR0PAQH/BAQDAgEGMA8GA1UdEwEB/wQFMAMBAf8wHQYDVR0OBBYEFI/wS3+o
            LkUkrk1Q+mOai97i3Ru8MA0GCSqGSIb3DQEBCwUAA4IBAQBLQNvAUKr+yAzv95ZU
            RUm7lgAJQayzE4aGKAczymvmdLm6AC2upArT9fHxD4q/c2dKg8dEe3jgr25sbwMp
            jjM5RcOO5LlXbKr8EpbsU8Yt5CRsuZRj+9xTaGdWPoO4zzUhw8lo/s7awlOqzJCK
            6fBdRoyV3XpYKBovHd7NADdBj+1EbddTKJd+82cEHhXXipa0095MJ6RMG3NzdvQX
            mcIfeg7jLQitChws/zyrVQ4PkX4268NXSb7hLi18YIvDQVETI53O9zJrlAGomecs
            Mx86OyXShkDOOyyGeMlhLxS67ttVb9+E7gUJTb0o2HLO02JQZR7rkpeDMdmztcpH
            WD9f
            -----END CERTIFICATE-----
            """
    }
}
