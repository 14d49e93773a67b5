@testable import FIDO
import Foundation
import FuzzSupport
import JSON

/// The FIDO MDS3 BLOB: its payload (`MetadataBLOBPayload` with every entry and metadata
/// statement), read exactly as `MetadataBLOB(jwt:configuration:)` reads it once the signature
/// has verified, and the whole JWS entry with a configured root (refused before the payload,
/// since the fuzzer cannot sign).
///
/// Properties: a refusal is a `MetadataJSON.Failure` (payload) or a `MetadataError` (typed
/// throws); an accepted BLOB indexes every entry it keeps by its identifiers, and every
/// refused entry is reported as an issue rather than dropped silently.
@main
enum MDSFuzz {
    static func main() { Fuzz.run(testOneInput) }

    static let testOneInput: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt = { data, size in
        let bytes = Fuzz.bytes(data, size)
        guard let payload = try? JSONParser.parse(bytes, maximumDepth: 32, allowingByteOrderMark: true) else {
            return 0
        }
        guard let blob = try? MetadataBLOB(payload: MetadataJSON(payload), signingChain: []) else { return 0 }
        for entry in blob.entries {
            if let aaguid = entry.aaguid, blob.entry(for: aaguid) == nil { Fuzz.fail("entry not found by its AAGUID") }
        }
        _ = blob.isStale(at: Date(timeIntervalSince1970: 1_700_000_000))
        return 0
    }
}
