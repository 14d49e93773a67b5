import Foundation
import TestRandom
import Testing
@testable import Crypto

/// Garbage, truncated and mutated certificates and DER: parsing and verification either
/// succeed or throw ``CryptoError``; they never trap, hang or throw anything else.
/// Deterministic (seeded) so that a failure reproduces.
@Suite struct X509FuzzTests {
    /// Synthetic certificates (always available) plus real ones when the vectors are present.
    static func seeds() throws -> [[UInt8]] {
        typealias Build = X509TestCertificates
        let root = try Build.root()
        let san = Build.seq([DER.tlv(0x82, Array("example.com".utf8)), DER.tlv(0xA4, Build.name([(X509OID.tpmModel, "M")]))])
        let cdp = DER.sequence(DER.sequence(DER.tlv(0xA0, DER.tlv(0xA0, DER.tlv(0x86, Array("http://crl.example/ca.crl".utf8))))))
        let leaf = try Build.issue(
            "Leaf", by: root, ca: false,
            extra: [
                .init(oid: X509OID.subjectAltName, critical: true, value: san),
                .init(oid: X509OID.extendedKeyUsage, critical: false, value: Build.extendedKeyUsage([X509OID.tcgKpAIKCertificate])),
                .init(oid: X509OID.fidoAAGUID, critical: false, value: DER.tlv(0x04, [UInt8](repeating: 7, count: 16))),
                .init(oid: X509OID.cRLDistributionPoints, critical: false, value: cdp),
            ])
        var seeds = [root.der, leaf.der]
        if X509TestVectors.isPresent {
            seeds += try X509TestVectors.anchors.prefix(2).map { try X509Certificate(pem: $0.pem).derEncoded }
            for name in ["test_verify_attestation_surface_pro_4", "test_verify_attestation_android_key_hardware_authority"] {
                seeds += try X509TestVectors.registration(named: name).x5c.prefix(2)
            }
        }
        return seeds
    }

    /// Mutations per seed; raise with X509_FUZZ_ITERATIONS for a longer local run.
    static let iterations = ProcessInfo.processInfo.environment["X509_FUZZ_ITERATIONS"].flatMap(Int.init) ?? 1500

    static let store: X509TrustStore? = try? X509TrustStore(anchors: [X509TestCertificates.root().certificate])

    /// Parses `bytes`; when that succeeds, reads everything and tries a verification.
    static func exercise(_ bytes: [UInt8]) {
        let certificate: X509Certificate
        do {
            certificate = try X509Certificate(derEncoded: bytes)
        } catch is CryptoError {
            return
        } catch {
            Issue.record("unexpected error type: \(type(of: error))")
            return
        }
        _ = (certificate.version, certificate.serialNumber, certificate.subject.commonName, certificate.issuer.attributes)
        _ = (certificate.notBefore, certificate.notAfter, certificate.signatureAlgorithmOID, certificate.extensionOIDs)
        _ = (certificate.basicConstraints, certificate.keyUsage, certificate.extendedKeyUsage, certificate.subjectAlternativeNames)
        _ = try? certificate.publicKey
        _ = try? certificate.fidoAAGUID()
        do {
            _ = try certificate.crlDistributionPointURIs()
        } catch is CryptoError {
        } catch {
            Issue.record("unexpected error type: \(type(of: error))")
        }
        _ = X509Certificate.verifySignature(of: certificate, by: certificate)
        for ext in certificate.extensions { _ = try? X509DERReader.validate(ext.value) }
        if let store {
            do {
                _ = try store.verify(certificate, intermediates: [certificate], at: X509TestVectors.utc(2025, 1, 1))
            } catch is CryptoError {
            } catch {
                Issue.record("unexpected error type: \(type(of: error))")
            }
        }
    }

    /// Reads `reader` with every typed read, then descends into constructed elements.
    static func walk(_ start: X509DERReader, depth: Int = 0) {
        var reader = start
        while !reader.isAtEnd {
            var p = reader
            _ = try? p.readInt()
            p = reader
            _ = try? p.readUnsignedInteger()
            p = reader
            _ = try? p.readEnumerated()
            p = reader
            _ = try? p.readBoolean()
            p = reader
            _ = try? p.readBitString()
            p = reader
            _ = try? p.readObjectIdentifier()
            p = reader
            _ = try? p.readString()
            p = reader
            try? p.readNull()
            p = reader
            _ = try? p.readExplicit(1)
            _ = try? reader.peekTag()
            guard let element = try? reader.readElement() else { return }
            if depth < 64, let inner = try? element.reader() { walk(inner, depth: depth + 1) }
        }
    }

    /// `seed` with one to four mutations: bit flips, random or extreme length bytes, bytes
    /// inserted, removed, or a run copied elsewhere.
    static func mutated(_ seed: [UInt8], using rng: inout SplitMix64) -> [UInt8] {
        var bytes = seed
        for _ in 0..<Int.random(in: 1...4, using: &rng) {
            let i = Int.random(in: 0..<max(bytes.count, 1), using: &rng)
            switch Int.random(in: 0..<6, using: &rng) {
            case 0 where !bytes.isEmpty: bytes[i] ^= UInt8(1) << UInt8.random(in: 0...7, using: &rng)
            case 1 where !bytes.isEmpty: bytes[i] = UInt8.random(in: 0...255, using: &rng)
            case 2: bytes.insert(UInt8.random(in: 0...255, using: &rng), at: min(i, bytes.count))
            case 3 where !bytes.isEmpty: bytes.remove(at: i)
            case 4 where !bytes.isEmpty:
                // Lengths are where parsers break: set one to an extreme.
                bytes[i] = [0x00, 0x7F, 0x80, 0x81, 0x82, 0x84, 0xFF].randomElement(using: &rng)!
            default:
                let j = Int.random(in: 0..<max(bytes.count, 1), using: &rng)
                bytes.insert(contentsOf: bytes[min(i, j)..<max(i, j)].prefix(64), at: min(j, bytes.count))
            }
        }
        return bytes
    }

    @Test func everyTruncationThrows() throws {
        for seed in try Self.seeds() {
            for length in 0..<seed.count {
                #expect(throws: CryptoError.self) { try X509Certificate(derEncoded: Array(seed[..<length])) }
            }
        }
    }

    @Test func mutatedCertificatesOnlyThrow() throws {
        var rng = SplitMix64(seed: 0x5151_4E45_5431)
        for seed in try Self.seeds() {
            for _ in 0..<Self.iterations {
                Self.exercise(Self.mutated(seed, using: &rng))
            }
        }
    }

    /// A v2 CRL of `root` listing serial 5, then mutations of it: parsing either succeeds or
    /// throws ``CryptoError``, and a parsed one given to a verification only ever refuses.
    @Test func mutatedCRLsOnlyThrow() throws {
        let root = try X509TestCertificates.root()
        let time = DER.tlv(0x17, Array("250101000000Z".utf8))
        let next = DER.tlv(0x17, Array("350101000000Z".utf8))
        let algorithm = DER.sequence(DER.oid("1.2.840.10045.4.3.2"))
        let subject = try root.certificate.subject.derEncoded
        let tbs = DER.sequence(
            DER.tlv(0x02, [0x01]), algorithm, subject, time, next, DER.sequence(DER.sequence(DER.tlv(0x02, [0x05]), time)))
        let seed = DER.sequence(tbs, algorithm, DER.bitString(try root.key.sign(tbs, algorithm: .es256)))
        let parsed = try X509CRL(derEncoded: seed)
        #expect(parsed.derEncoded == seed)
        var rng = SplitMix64(seed: 0x4352_4C46_555A)
        let anchor = try root.certificate
        let store = try X509TrustStore(anchors: [anchor])
        for _ in 0..<Self.iterations {
            let crl: X509CRL
            do {
                crl = try X509CRL(derEncoded: Self.mutated(seed, using: &rng))
            } catch is CryptoError {
                continue
            } catch {
                Issue.record("unexpected error type: \(type(of: error))")
                continue
            }
            do {
                _ = try store.verify(anchor, at: X509TestVectors.utc(2026, 1, 1), options: X509VerificationOptions(crls: [crl]))
            } catch is CryptoError {
            } catch {
                Issue.record("unexpected error type: \(type(of: error))")
            }
        }
    }

    @Test func randomGarbageOnlyThrows() {
        var rng = SplitMix64(seed: 42)
        for round in 0..<(Self.iterations * 3) {
            let count = Int.random(in: 0...400, using: &rng)
            var bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &rng) }
            // Half the time, look like a certificate's opening so the parser goes deeper.
            if round % 2 == 0 {
                bytes = [0x30, 0x82, UInt8(count >> 8), UInt8(count & 0xFF), 0x30, 0x82] + bytes
            }
            Self.exercise(bytes)
            _ = try? X509DERReader.validate(bytes)
            Self.walk(X509DERReader(bytes))
        }
    }

    @Test func derReaderSurvivesMutatedStructures() throws {
        var rng = SplitMix64(seed: 7)
        for seed in try Self.seeds() {
            for _ in 0..<300 {
                var bytes = seed
                for _ in 0..<3 where !bytes.isEmpty {
                    bytes[Int.random(in: 0..<bytes.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
                }
                _ = try? X509DERReader.validate(bytes)
                Self.walk(X509DERReader(bytes))
            }
        }
    }

    @Test func pemGarbageOnlyThrows() throws {
        var rng = SplitMix64(seed: 99)
        let seeds = try Self.seeds()
        let pieces = ["-----BEGIN CERTIFICATE-----", "-----END CERTIFICATE-----", "-----BEGIN X-----", "MIIB", "====", "\r", " ", "é", ""]
        for _ in 0..<500 {
            var lines: [String] = []
            for _ in 0..<Int.random(in: 0...6, using: &rng) {
                if Bool.random(using: &rng) {
                    lines.append(pieces.randomElement(using: &rng)!)
                } else {
                    var der = seeds.randomElement(using: &rng)!
                    der = Array(der.prefix(Int.random(in: 0...der.count, using: &rng)))
                    lines.append(Data(der).base64EncodedString())
                }
            }
            do {
                _ = try X509Certificate.certificates(fromPEM: lines.joined(separator: "\n"))
            } catch is CryptoError {
            } catch {
                Issue.record("unexpected error type: \(type(of: error))")
            }
        }
    }
}
