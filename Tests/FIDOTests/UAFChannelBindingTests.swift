import Crypto
@testable import FIDO
import Foundation
import Platform
import Testing
import TestSupport

/// UAF channel binding (Protocol §3.1.8, §3.5.7.5 step 3.d) as Signet checks it behind a gateway
/// that terminates TLS: the certificate(s) the gateway presents are configured
/// (`SIGNET_UAF_TLS_SERVER_CERTIFICATES`); a `serverEndPoint` or `tlsServerCertificate` the
/// client sends must be theirs; values the client does not send are not required; `tlsUnique`
/// and `cid_pubkey` are per connection and compared only when the connection's own values are
/// given (`UAFResponseContext.channelBinding`).
@Suite struct UAFChannelBindingTests {
    static let appID = "https://example.test/uaf/facets"
    static let facet = "https://example.test"

    struct Setup {
        let authenticator: SoftUAFAuthenticator
        let record: UAFRegistrationRecord
        let gateway: UAFServerCertificate
        let other: UAFServerCertificate
    }

    func setup() throws -> Setup {
        let authenticator = SoftUAFAuthenticator(facetID: Self.facet)
        let krd = try UAFRegistrationAssertion(bytes: authenticator.registrationAssertion(fcParams: "unused"))
        let record = UAFRegistrationRecord(
            aaid: krd.aaid, keyID: krd.keyID, publicKey: krd.publicKey, keyEncoding: .eccX962Raw, signatureAlgorithm: krd.info.signatureAlgorithm,
            signCounter: 0, attestationType: .attestationBasicSurrogate)
        let gateway = UAFServerCertificate(try MetadataTestPKI.root("gateway.example.test").certificate)
        let other = UAFServerCertificate(try MetadataTestPKI.root("elsewhere.example").certificate)
        return Setup(authenticator: authenticator, record: record, gateway: gateway, other: other)
    }

    func code(_ s: Setup, _ binding: UAFChannelBinding, certificates: [UAFServerCertificate], connection: UAFChannelBinding? = nil) -> UAFError.Code? {
        s.authenticator.channelBinding = binding
        do {
            let request = UAFAuthenticationRequest(
                header: UAFOperationHeader(upv: .v1_2, op: "Auth", appID: Self.appID, serverData: "sd"), challenge: "chal", transaction: nil,
                policy: .acceptAll)
            let response = try UAFMessageDecoding.response(try s.authenticator.authenticate(request))
            let context = UAFResponseContext(appID: Self.appID, trustedFacetIDs: [Self.facet], channelBinding: connection, serverCertificates: certificates)
            _ = try UAFAuthenticationVerifier(context: context).verify(response, expectedChallenge: "chal", serverData: "sd") { _, _ in s.record }
            return nil
        } catch let error as UAFError {
            return error.code
        } catch {
            Issue.record("\(error)")
            return nil
        }
    }

    @Test func serverEndPointIsTheCertificateHashOfRFC5929() throws {
        let root = try MetadataTestPKI.root("gateway.example.test")
        let certificate = try root.certificate
        let expected: AttestationDigest =
            switch certificate.signatureAlgorithmOID {
            case "1.2.840.10045.4.3.3": .sha384
            case "1.2.840.10045.4.3.4": .sha512
            default: .sha256
            }
        let bound = UAFServerCertificate(certificate)
        #expect(bound.serverEndPoint == Base64URL.encode(expected.hash(root.der)))
        #expect(bound.tlsServerCertificate == Base64URL.encode(root.der))
        // RFC 5929 §4.1: MD5 and SHA-1 are replaced by SHA-256; others keep their own hash;
        // no single hash (Ed25519, RSASSA-PSS): undefined.
        #expect(UAFServerCertificate.endPointDigest(signatureAlgorithmOID: "1.2.840.113549.1.1.5") == .sha256)
        #expect(UAFServerCertificate.endPointDigest(signatureAlgorithmOID: "1.2.840.10045.4.1") == .sha256)
        #expect(UAFServerCertificate.endPointDigest(signatureAlgorithmOID: "1.2.840.113549.1.1.12") == .sha384)
        #expect(UAFServerCertificate.endPointDigest(signatureAlgorithmOID: "1.2.840.10045.4.3.4") == .sha512)
        #expect(UAFServerCertificate.endPointDigest(signatureAlgorithmOID: "1.3.101.112") == nil)
        #expect(UAFServerCertificate.endPointDigest(signatureAlgorithmOID: "1.2.840.113549.1.1.10") == nil)
    }

    @Test func theGatewaysCertificateIsComparedWhenConfigured() throws {
        let s = try setup()
        var binding = UAFChannelBinding()
        // Nothing sent: nothing to compare (a client that cannot tell), configured or not.
        #expect(code(s, binding, certificates: [s.gateway]) == nil)
        // The gateway's certificate, as its hash or whole: accepted.
        binding.serverEndPoint = s.gateway.serverEndPoint
        #expect(code(s, binding, certificates: [s.gateway]) == nil)
        binding.tlsServerCertificate = s.gateway.tlsServerCertificate
        #expect(code(s, binding, certificates: [s.gateway]) == nil)
        // During a rotation both certificates are configured: either passes.
        #expect(code(s, binding, certificates: [s.other, s.gateway]) == nil)
        // Another server's certificate (a TLS-intercepting proxy between client and gateway).
        binding.serverEndPoint = s.other.serverEndPoint
        #expect(code(s, binding, certificates: [s.gateway]) == .channelBindingMismatch)
        binding.serverEndPoint = s.gateway.serverEndPoint
        binding.tlsServerCertificate = s.other.tlsServerCertificate
        #expect(code(s, binding, certificates: [s.gateway]) == .channelBindingMismatch)
        // Empty strings are values not given.
        binding.serverEndPoint = ""
        binding.tlsServerCertificate = ""
        #expect(code(s, binding, certificates: [s.gateway]) == nil)
        // Not configured: not compared (documented: the README says what is checked).
        binding.serverEndPoint = s.other.serverEndPoint
        #expect(code(s, binding, certificates: []) == nil)
    }

    @Test func perConnectionValuesAreComparedOnlyWithTheConnectionsOwn() throws {
        let s = try setup()
        var binding = UAFChannelBinding()
        binding.tlsUnique = Base64URL.encode([1, 2, 3])
        binding.cid_pubkey = "unused"
        // Behind the gateway the services do not know the connection's tls-unique: not compared.
        #expect(code(s, binding, certificates: [s.gateway]) == nil)
        // A server that terminates TLS itself passes the connection's values.
        var seen = UAFChannelBinding()
        seen.tlsUnique = Base64URL.encode([1, 2, 3])
        #expect(code(s, binding, certificates: [], connection: seen) == nil)
        seen.tlsUnique = Base64URL.encode([9, 9, 9])
        #expect(code(s, binding, certificates: [], connection: seen) == .channelBindingMismatch)
    }

    @Test func theCertificateFileIsReadAtStartUp() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("uaf-cb-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let pem = try [MetadataTestPKI.root("gateway.example.test"), MetadataTestPKI.root("next.example.test")].map { issued in
            "-----BEGIN CERTIFICATE-----\n" + Data(issued.der).base64EncodedString(options: .lineLength64Characters) + "\n-----END CERTIFICATE-----\n"
        }.joined()
        let file = directory.appendingPathComponent("gateway.pem").path
        try Data(pem.utf8).write(to: URL(fileURLWithPath: file))
        #expect(try UAFServerCertificate.fromEnvironment(Environment(["SIGNET_UAF_TLS_SERVER_CERTIFICATES": file])).count == 2)
        #expect(try UAFServerCertificate.fromEnvironment(Environment([:])).isEmpty)
        // A file that cannot be read stops the start-up, naming the variable.
        let error = #expect(throws: Environment.ConfigurationError.self) {
            _ = try UAFServerCertificate.fromEnvironment(Environment(["SIGNET_UAF_TLS_SERVER_CERTIFICATES": directory.appendingPathComponent("missing.pem").path]))
        }
        #expect(error?.variable == "SIGNET_UAF_TLS_SERVER_CERTIFICATES")
    }
}
