import COpenSSL
import FoundationEssentials

/// A certificate revocation list (RFC 5280 §5) in DER, parsed by OpenSSL (`d2i_X509_CRL`).
///
/// Nothing about it is trusted on parsing: its issuer, signature, `thisUpdate`/`nextUpdate` and
/// entries are judged where it is used, by ``X509TrustStore`` when it is among
/// ``X509VerificationOptions/crls`` (OpenSSL's CRL checks: signed by the certificate's issuer,
/// whose keyUsage allows cRLSign, current at the verification time, no unhandled critical
/// extension).
public final class X509CRL: @unchecked Sendable, Hashable {
    // @unchecked Sendable: the X509_CRL is never changed after parsing; OpenSSL only reads it
    // while verifying (it caches its extensions on parsing, under its own lock).
    let handle: OpaquePointer
    /// The DER encoding given.
    public let derEncoded: [UInt8]

    /// CRLs larger than this are refused before OpenSSL sees them (a CA's CRL for an MDS
    /// signing chain is a few hundred bytes to a few KiB).
    public static let maximumDERSize = 2 * 1024 * 1024

    /// - Throws: ``CryptoError`` when the bytes are not exactly one well-formed CRL.
    public init(derEncoded der: [UInt8]) throws {
        guard !der.isEmpty else { throw CryptoError("X.509: empty CRL") }
        guard der.count <= Self.maximumDERSize else { throw CryptoError("X.509: CRL larger than \(Self.maximumDERSize) bytes") }
        guard let decoded = DERObject.decodeWhole(der, d2i_X509_CRL, free: X509_CRL_free) else {
            ERR_clear_error()
            throw CryptoError("X.509: not a well-formed CRL")
        }
        handle = decoded
        derEncoded = der
    }

    deinit { X509_CRL_free(handle) }

    public static func == (a: X509CRL, b: X509CRL) -> Bool { a.derEncoded == b.derEncoded }
    public func hash(into hasher: inout Hasher) { hasher.combine(derEncoded) }
}

extension X509Certificate {
    /// The `uniformResourceIdentifier`s of the `fullName`s of the certificate's CRL
    /// distribution points (RFC 5280 §4.2.1.13), in order: where the CRL that covers it can be
    /// fetched. Distribution points named relative to the CRL issuer, and other name forms,
    /// are left out. Empty without the extension.
    ///
    /// - Throws: ``CryptoError`` when the extension is not well-formed DER of its syntax.
    public func crlDistributionPointURIs() throws -> [String] {
        guard let value = extensionValue(oid: X509OID.cRLDistributionPoints)?.value else { return [] }
        // CRLDistributionPoints ::= SEQUENCE SIZE (1..MAX) OF DistributionPoint
        var outer = X509DERReader(value)
        var points = try outer.readSequence()
        try outer.finish()
        var uris: [String] = []
        while !points.isAtEnd {
            // DistributionPoint ::= SEQUENCE { distributionPoint [0] DistributionPointName OPTIONAL,
            //     reasons [1] ReasonFlags OPTIONAL, cRLIssuer [2] GeneralNames OPTIONAL }
            var point = try points.readSequence()
            // A tagged CHOICE is explicitly tagged; fullName [0] GeneralNames is implicit.
            if var name = try point.readOptionalExplicit(0),
                let fullName = try name.readOptionalElement(.contextSpecific(0, constructed: true))
            {
                var names = try fullName.reader()
                while !names.isAtEnd {
                    let element = try names.readElement()
                    // uniformResourceIdentifier [6] IA5String
                    guard element.tag == X509DERReader.Tag(.contextSpecific, number: 6, constructed: false) else { continue }
                    guard element.content.allSatisfy({ (0x21...0x7E).contains($0) }) else {
                        throw CryptoError("X.509: a CRL distribution point URI is not printable ASCII")
                    }
                    uris.append(String(decoding: element.content, as: UTF8.self))
                }
            }
        }
        return uris
    }
}

/// OpenSSL's `d2i_*` over DER that must be exactly one object.
enum DERObject {
    /// `d2i` over the whole of `der`: the object, or nil when it does not parse or leaves bytes
    /// over (then freed with `free`). OpenSSL's error queue is the caller's to clear.
    static func decodeWhole(
        _ der: [UInt8], _ d2i: (UnsafeMutablePointer<OpaquePointer?>?, UnsafeMutablePointer<UnsafePointer<UInt8>?>?, Int) -> OpaquePointer?,
        free: (OpaquePointer?) -> Void
    ) -> OpaquePointer? {
        der.withUnsafeBufferPointer { buf in
            guard let base = buf.baseAddress else { return nil }
            var p: UnsafePointer<UInt8>? = base
            guard let object = d2i(nil, &p, buf.count) else { return nil }
            guard p == base + buf.count else {
                free(object)
                return nil
            }
            return object
        }
    }
}
