import Crypto
import FIDO
import Foundation
import Synchronization
import Testing
import TestSupport
import Tokens

/// The metadata BLOB's signing chain checked for revocation (MDS 3.0 §3.2, RFC 5280 §6.3):
/// the CRLs its certificates name are fetched through the source once the chain has validated,
/// and a certificate listed, or one whose CRL cannot be had or is not current, refuses the BLOB.
@Suite struct MetadataRevocationTests {
    static let time = MetadataTestPKI.verificationTime
    static let base = "http://crl.test.example"

    /// A BLOB and the CRLs it names, served from memory; records the CRLs asked for.
    final class Source: MetadataSource, Sendable {
        let jwt: String
        let crls: [String: [UInt8]]
        let serves: Bool
        let asked = Mutex<[String]>([])

        init(jwt: String, crls: [String: [UInt8]], serves: Bool = true) {
            self.jwt = jwt
            self.crls = crls
            self.serves = serves
        }

        func fetchBLOB(maximumSize: Int) async throws(MetadataError) -> String { jwt }

        func fetchCRL(url: String, maximumSize: Int) async throws(MetadataError) -> [UInt8]? {
            guard serves else { return nil }
            asked.withLock { $0.append(url) }
            guard let der = crls[url] else { throw MetadataError(.revocationUnknown, "test: no CRL there") }
            return der
        }
    }

    let chain: MetadataTestPKI.Chain
    let jwt: String

    init() throws {
        chain = try MetadataTestPKI.Chain(crlBase: Self.base)
        jwt = try MetadataTestPKI.blob(payload: MetadataTestPKI.payload(no: 7, entries: []), chain: chain)
    }

    /// The CRLs of both CAs, current, listing `revokedByRoot` and `revokedByCA`.
    func crls(revokedByRoot: [UInt8] = [], revokedByCA: [UInt8] = []) throws -> [String: [UInt8]] {
        [
            "\(Self.base)/root.crl": try MetadataTestPKI.crl(by: chain.root, revoked: revokedByRoot),
            "\(Self.base)/ca.crl": try MetadataTestPKI.crl(by: chain.intermediate, revoked: revokedByCA),
        ]
    }

    func load(_ source: Source) async throws -> (MetadataService, MetadataUpdate) {
        let service = MetadataService(configuration: try chain.configuration)
        return (service, try await service.load(from: source, at: Self.time))
    }

    func expectRefused(_ source: Source, _ code: MetadataError.Code, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let service = MetadataService(configuration: try chain.configuration)
        do {
            _ = try await service.load(from: source, at: Self.time)
            Issue.record("the BLOB was installed", sourceLocation: sourceLocation)
        } catch {
            #expect(error.code == code, "\(error.debugDescription)", sourceLocation: sourceLocation)
        }
        #expect(service.blob == nil, "a refused BLOB is not in force", sourceLocation: sourceLocation)
    }

    @Test func theDistributionPointsAreReadFromTheCertificates() throws {
        #expect(try chain.signer.certificate.crlDistributionPointURIs() == ["\(Self.base)/ca.crl"])
        #expect(try chain.intermediate.certificate.crlDistributionPointURIs() == ["\(Self.base)/root.crl"])
        #expect(try chain.root.certificate.crlDistributionPointURIs() == [])
        let blob = try MetadataBLOB(jwt: jwt, configuration: try chain.configuration, at: Self.time)
        #expect(try blob.revocationLocations() == [["\(Self.base)/ca.crl"], ["\(Self.base)/root.crl"]])
    }

    @Test func aChainCoveredByCurrentCRLsIsInstalledChecked() async throws {
        let source = Source(jwt: jwt, crls: try crls(revokedByRoot: [9], revokedByCA: [8]))
        let (service, update) = try await load(source)
        #expect(update.revocation == .checked && update.number == 7 && service.currentNumber == 7)
        #expect(source.asked.withLock { $0 } == ["\(Self.base)/ca.crl", "\(Self.base)/root.crl"])
    }

    @Test func aRevokedSignerOrIntermediateRefusesTheBLOB() async throws {
        try await expectRefused(Source(jwt: jwt, crls: try crls(revokedByCA: [3])), .certificateRevoked)
        try await expectRefused(Source(jwt: jwt, crls: try crls(revokedByRoot: [2])), .certificateRevoked)
    }

    @Test func aCRLThatCannotBeHadOrIsNotCurrentRefusesTheBLOB() async throws {
        // Missing.
        var missing = try crls()
        missing["\(Self.base)/root.crl"] = nil
        try await expectRefused(Source(jwt: jwt, crls: missing), .revocationUnknown)
        // Not a CRL.
        var garbage = try crls()
        garbage["\(Self.base)/ca.crl"] = Array("not a CRL".utf8)
        try await expectRefused(Source(jwt: jwt, crls: garbage), .revocationUnknown)
        // Expired before the verification time.
        var expired = try crls()
        expired["\(Self.base)/ca.crl"] = try MetadataTestPKI.crl(
            by: chain.intermediate, thisUpdate: MetadataTestPKI.defaultNotBefore, nextUpdate: Self.time.addingTimeInterval(-86_400))
        try await expectRefused(Source(jwt: jwt, crls: expired), .revocationUnknown)
        // Not signed by the issuer (a CRL of the right name under another key).
        var forged = try crls()
        forged["\(Self.base)/ca.crl"] = try MetadataTestPKI.crl(by: chain.intermediate, signer: try PrivateKey.generateP256())
        try await expectRefused(Source(jwt: jwt, crls: forged), .revocationUnknown)
        // The root's CRL served for the CA's: the signer has no CRL of its issuer.
        var swapped = try crls()
        swapped["\(Self.base)/ca.crl"] = swapped["\(Self.base)/root.crl"]
        try await expectRefused(Source(jwt: jwt, crls: swapped), .revocationUnknown)
    }

    @Test func whatIsNotCheckedIsSaid() async throws {
        // A source that fetches no CRLs (a file).
        let (_, file) = try await load(Source(jwt: jwt, crls: [:], serves: false))
        #expect(file.revocation == .sourceFetchesNone)
        // A chain that names no distribution point.
        let plain = try MetadataTestPKI.Chain()
        let plainJWT = try MetadataTestPKI.blob(payload: MetadataTestPKI.payload(no: 1, entries: []), chain: plain)
        let service = MetadataService(configuration: try plain.configuration)
        let source = Source(jwt: plainJWT, crls: [:])
        #expect(try await service.load(from: source, at: Self.time).revocation == .noDistributionPoint)
        #expect(source.asked.withLock { $0 }.isEmpty)
        // Signed by the configured root itself.
        let rootSigned = try MetadataTestPKI.blob(
            payload: MetadataTestPKI.payload(no: 2, entries: []), chain: plain, includeX5C: false, signer: plain.root.key)
        let rooted = MetadataService(configuration: try plain.configuration)
        #expect(try await rooted.load(from: Source(jwt: rootSigned, crls: [:]), at: Self.time).revocation == .signedByRoot)
    }

    /// A signer whose cRLDistributionPoints extension does not parse refuses the BLOB (whichever
    /// check sees it first: the certificate's parser, OpenSSL's path validation, or the
    /// distribution points' reader): it is never taken for one that names no CRL, which would
    /// go unchecked.
    @Test(arguments: [
        [0x30, 0x04, 0x30, 0x02, 0xA0, 0x05] as [UInt8],  // a truncated [0]: not DER
        [0x30, 0x03, 0x02, 0x01, 0x01],  // DER, but an INTEGER where a DistributionPoint goes
        [0x30, 0x06, 0x30, 0x04, 0xA0, 0x02, 0x02, 0x00],  // a distributionPoint that is no name
    ])
    func aMalformedDistributionPointRefusesTheBLOB(value: [UInt8]) async throws {
        let root = try MetadataTestPKI.root()
        let ca = try MetadataTestPKI.issue("MDS Test CA", by: root, ca: true, crlURIs: ["\(Self.base)/root.crl"])
        let signer = try MetadataTestPKI.issue("MDS Test Signer", by: ca, serial: 3, crlDistributionPointsValue: value)
        let header = JWSHeader(algorithm: .es256, type: "JWT", additionalParameters: ["x5c": .array([.string(signer.base64), .string(ca.base64)])])
        let payload = try JSONSerialization.data(withJSONObject: MetadataTestPKI.payload(no: 4, entries: []), options: [.sortedKeys])
        let jwt = try JWS.sign(payload: Array(payload), header: header, key: signer.key)
        let service = MetadataService(configuration: MetadataBLOB.Configuration(roots: [try root.certificate]))
        do {
            _ = try await service.load(from: Source(jwt: jwt, crls: [:]), at: Self.time)
            Issue.record("the BLOB was installed")
        } catch {
            #expect([.certificateInvalid, .chainUntrusted, .revocationUnknown].contains(error.code), "\(error.debugDescription)")
        }
        #expect(service.blob == nil)
    }

    /// A chain that does not validate never has its CRL locations fetched: an address from an
    /// unverified BLOB is never asked for.
    @Test func anUntrustedChainFetchesNothing() async throws {
        let other = try MetadataTestPKI.Chain(crlBase: Self.base)
        let source = Source(jwt: try MetadataTestPKI.blob(payload: MetadataTestPKI.payload(no: 3, entries: []), chain: other), crls: try crls())
        try await expectRefused(source, .chainUntrusted)
        #expect(source.asked.withLock { $0 }.isEmpty)
    }
}
