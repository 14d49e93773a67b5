import Crypto
import HTTPServer
import Platform
import ServiceKit
import Testing

/// Sealed ceremony handles and the tags of the same key: what opens, what is refused, and how
/// the key is changed with `SIGNET_CEREMONY_KEY_ACCEPTED` without failing what is in flight.
struct CeremonyHandlesTests {
    static let old = [UInt8](repeating: 1, count: 32)
    static let new = [UInt8](repeating: 2, count: 32)
    static let logger = Logger(label: "test", level: .error)

    static func isInvalidHandle(_ body: () throws -> [UInt8]) -> Bool {
        do {
            _ = try body()
            return false
        } catch let error as HTTPError {
            return error.code == ProblemCode.invalidHandle
        } catch {
            return false
        }
    }

    @Test func aHandleOpensForItsPurposeAndKeyOnly() throws {
        let handles = try CeremonyHandles(key: Self.old)
        let sealed = try handles.seal(bytes: [1, 2, 3], purpose: "a")
        #expect(try handles.openBytes(sealed, purpose: "a") == [1, 2, 3])
        #expect(Self.isInvalidHandle { try handles.openBytes(sealed, purpose: "b") }, "another purpose")
        #expect(Self.isInvalidHandle { try CeremonyHandles(key: Self.new).openBytes(sealed, purpose: "a") }, "another key")
        var bytes = try #require(Base64URL.decode(sealed))
        bytes[bytes.count / 2] ^= 1
        #expect(Self.isInvalidHandle { try handles.openBytes(Base64URL.encode(bytes), purpose: "a") }, "altered")
        #expect(Self.isInvalidHandle { try handles.openBytes(String(repeating: "A", count: 8193), purpose: "a") }, "too long")
        #expect(Self.isInvalidHandle { try handles.openBytes("", purpose: "a") }, "empty")
    }

    /// The two steps of a key change: every replica first accepts the new key while sealing
    /// with the old one, then seals with the new one and accepts the old one. At each step a
    /// handle sealed by any replica opens on every other one; a replica that no longer accepts
    /// the old key refuses its handles.
    @Test func theKeyChangesInTwoStepsWithoutFailingHandlesInFlight() throws {
        let before = try CeremonyHandles(key: Self.old)
        let stepOne = try CeremonyHandles(key: Self.old, accepted: [Self.new])
        let stepTwo = try CeremonyHandles(key: Self.new, accepted: [Self.old])
        let after = try CeremonyHandles(key: Self.new)
        // Rolling out step one: replicas before it and replicas in it open each other's handles.
        for (from, to) in [(before, stepOne), (stepOne, before), (stepOne, stepOne)] {
            let sealed = try from.seal(bytes: [7], purpose: "p")
            #expect(try to.openBytes(sealed, purpose: "p") == [7])
        }
        // Rolling out step two: replicas of step one and of step two likewise.
        for (from, to) in [(stepOne, stepTwo), (stepTwo, stepOne), (stepTwo, stepTwo)] {
            let sealed = try from.seal(bytes: [8], purpose: "p")
            #expect(try to.openBytes(sealed, purpose: "p") == [8])
        }
        // Step two seals with the new key: a replica that knows only the old one refuses it,
        // one that knows only the new one opens it.
        let sealedInStepTwo = try stepTwo.seal(bytes: [9], purpose: "p")
        #expect(Self.isInvalidHandle { try before.openBytes(sealedInStepTwo, purpose: "p") })
        #expect(try after.openBytes(sealedInStepTwo, purpose: "p") == [9])
        // Once the old key is dropped, its handles are refused.
        let sealedBefore = try before.seal(bytes: [10], purpose: "p")
        #expect(Self.isInvalidHandle { try after.openBytes(sealedBefore, purpose: "p") })
        // The Codable form follows the same keys.
        let state = try stepOne.seal(["k": "v"], purpose: "c")
        #expect(try stepTwo.open(state, as: [String: String].self, purpose: "c") == ["k": "v"])
        #expect(throws: HTTPError.self) { try after.open(state, as: [String: String].self, purpose: "c") }
    }

    @Test func tagsAreMadeWithTheSealingKeyAndRecognisedUnderAnyAccepted() throws {
        let message: [UInt8] = Array("random and tenant".utf8)
        let old = try CeremonyHandles(key: Self.old)
        let stepTwo = try CeremonyHandles(key: Self.new, accepted: [Self.old])
        let after = try CeremonyHandles(key: Self.new)
        #expect(stepTwo.tag(message, purpose: "p") == after.tag(message, purpose: "p"), "made with the sealing key")
        #expect(stepTwo.tag(message, purpose: "p") != old.tag(message, purpose: "p"))
        let oldTag = Array(old.tag(message, purpose: "p").prefix(8))
        #expect(stepTwo.isTag(oldTag, of: message, purpose: "p"))
        #expect(!after.isTag(oldTag, of: message, purpose: "p"), "the old key dropped")
        #expect(!stepTwo.isTag(oldTag, of: message + [0], purpose: "p"), "another message")
        #expect(!stepTwo.isTag(oldTag, of: message, purpose: "q"), "another purpose")
        #expect(!stepTwo.isTag(Array(oldTag.prefix(7)), of: message, purpose: "p"), "shorter than 8 bytes")
        #expect(!stepTwo.isTag([], of: message, purpose: "p"))
        #expect(stepTwo.isTag(old.tag(message, purpose: "p"), of: message, purpose: "p"), "the whole tag")
    }

    @Test func theAcceptedKeysAreReadStrictly() throws {
        let old = Base64URL.encode(Self.old), new = Base64URL.encode(Self.new)
        func handles(_ values: [String: String]) throws -> CeremonyHandles {
            try CeremonyHandles.fromEnvironment(Environment(values), logger: Self.logger)
        }
        let stepTwo = try handles(["SIGNET_CEREMONY_KEY": new, "SIGNET_CEREMONY_KEY_ACCEPTED": " \(old) "])
        let sealed = try CeremonyHandles(key: Self.old).seal(bytes: [3], purpose: "p")
        #expect(try stepTwo.openBytes(sealed, purpose: "p") == [3])
        let three = (3...5).map { Base64URL.encode([UInt8](repeating: UInt8($0), count: 32)) }
        #expect((try? handles(["SIGNET_CEREMONY_KEY": new, "SIGNET_CEREMONY_KEY_ACCEPTED": ([old] + three).joined(separator: ",")])) != nil)
        // Each refusal names the variable and the position, never a key's text.
        for (accepted, reason) in [
            ("\(old),\(old)", "key 2 is listed twice"),
            ("\(old),", "key 2 must be 32 bytes, base64url"),
            (String(old.dropLast()), "key 1 must be 32 bytes, base64url"),
            ("\(old),\(new)", "lists SIGNET_CEREMONY_KEY itself"),
            (([old] + three + [Base64URL.encode([UInt8](repeating: 6, count: 32))]).joined(separator: ","), "at most 4 keys"),
        ] {
            do {
                _ = try handles(["SIGNET_CEREMONY_KEY": new, "SIGNET_CEREMONY_KEY_ACCEPTED": accepted])
                Issue.record("accepted \(reason)")
            } catch let error as Environment.ConfigurationError {
                #expect(error.variable == "SIGNET_CEREMONY_KEY_ACCEPTED")
                #expect(error.reason == reason)
                #expect(!error.description.contains(old) && !error.description.contains(String(old.dropLast())))
            }
        }
        // Accepted keys never stand in for the sealing key off loopback.
        #expect(throws: Environment.ConfigurationError.self) {
            try handles(["SIGNET_HTTP_HOST": "0.0.0.0", "SIGNET_CEREMONY_KEY_ACCEPTED": old])
        }
    }

    /// Every sealing key reads its `_ACCEPTED` list the same way.
    @Test func aSealingKeyReadsItsAcceptedList() throws {
        let old = Base64URL.encode(Self.old), new = Base64URL.encode(Self.new)
        let keys = try ServiceKeys.sealingKeys(
            "SIGNET_PII_KEK", Environment(["SIGNET_PII_KEK": new, "SIGNET_PII_KEK_ACCEPTED": old]), logger: Self.logger)
        #expect(keys.acceptsOthers)
        let underOld = try SealingKeys(key: Self.old).seal([1], associatedData: [])
        #expect(try keys.open(underOld) == [1])
        #expect(try !ServiceKeys.sealingKeys("SIGNET_PII_KEK", Environment(["SIGNET_PII_KEK": new]), logger: Self.logger).acceptsOthers)
        for (accepted, reason) in [("\(new)", "lists SIGNET_PII_KEK itself"), ("x", "key 1 must be 32 bytes, base64url")] {
            #expect {
                try ServiceKeys.sealingKeys("SIGNET_PII_KEK", Environment(["SIGNET_PII_KEK": new, "SIGNET_PII_KEK_ACCEPTED": accepted]), logger: Self.logger)
            } throws: { error in
                (error as? Environment.ConfigurationError)?.variable == "SIGNET_PII_KEK_ACCEPTED"
                    && (error as? Environment.ConfigurationError)?.reason == reason
            }
        }
        // Off loopback the accepted keys never stand in for a missing key.
        #expect(throws: Environment.ConfigurationError.self) {
            try ServiceKeys.sealingKeys("SIGNET_PII_KEK", Environment(["SIGNET_HTTP_HOST": "0.0.0.0", "SIGNET_PII_KEK_ACCEPTED": old]), logger: Self.logger)
        }
    }
}
