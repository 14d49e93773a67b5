import Crypto
import ServiceKit
import Testing
@testable import AuthenticationService

/// The direct sign-in's session ids recognise themselves: for the tenant and key they were
/// made with, and for nothing else.
struct DirectSessionIDTests {
    static let handles = try! CeremonyHandles(key: [UInt8](repeating: 7, count: 32))

    @Test func anIdIsRecognisedForItsTenantAndKeyOnly() throws {
        let sid = DirectSessionID.make(tenant: "acme", handles: Self.handles)
        #expect(sid.utf8.count == DirectSessionID.characterCount)
        #expect(DirectSessionID.make(tenant: "acme", handles: Self.handles) != sid, "random part")
        #expect(DirectSessionID.isIssued(sid, tenant: "acme", handles: Self.handles))
        #expect(!DirectSessionID.isIssued(sid, tenant: "acme2", handles: Self.handles), "another tenant")
        let otherKey = try CeremonyHandles(key: [UInt8](repeating: 8, count: 32))
        #expect(!DirectSessionID.isIssued(sid, tenant: "acme", handles: otherKey), "another deployment's key")
    }

    /// After `SIGNET_CEREMONY_KEY` changes, ids made under the previous key are recognised while
    /// it stays in `SIGNET_CEREMONY_KEY_ACCEPTED` (their sessions can still be revoked), new
    /// ids are made under the new key, and once the old key is dropped its ids are refused.
    @Test func anIdMadeBeforeAKeyChangeIsRecognisedWhileItsKeyIsAccepted() throws {
        let old = [UInt8](repeating: 7, count: 32), new = [UInt8](repeating: 9, count: 32)
        let before = DirectSessionID.make(tenant: "acme", handles: Self.handles)
        let changed = try CeremonyHandles(key: new, accepted: [old])
        #expect(DirectSessionID.isIssued(before, tenant: "acme", handles: changed))
        #expect(!DirectSessionID.isIssued(before, tenant: "acme2", handles: changed))
        let made = DirectSessionID.make(tenant: "acme", handles: changed)
        #expect(!DirectSessionID.isIssued(made, tenant: "acme", handles: Self.handles), "made under the new key")
        let dropped = try CeremonyHandles(key: new)
        #expect(DirectSessionID.isIssued(made, tenant: "acme", handles: dropped))
        #expect(!DirectSessionID.isIssued(before, tenant: "acme", handles: dropped))
    }

    @Test func anyAlteredOrForeignValueIsRefused() throws {
        let sid = DirectSessionID.make(tenant: "acme", handles: Self.handles)
        let bytes = try #require(Base64URL.decode(sid))
        // Every bit of the random part and of the tag matters.
        for i in 0..<bytes.count {
            for bit in 0..<8 {
                var altered = bytes
                altered[i] ^= UInt8(1 << bit)
                #expect(!DirectSessionID.isIssued(Base64URL.encode(altered), tenant: "acme", handles: Self.handles), "byte \(i) bit \(bit)")
            }
        }
        // A flow's session id (22 characters), truncations, extensions, padding, garbage.
        for value in [
            SessionIssuer.newSessionID(), String(sid.dropLast()), sid + "A", sid + "=", "", String(repeating: "A", count: 32),
            String(repeating: "!", count: 32), String(sid.map { $0 == "-" ? "+" : $0 }),
        ] where value != sid {
            #expect(!DirectSessionID.isIssued(value, tenant: "acme", handles: Self.handles), "\(value)")
        }
    }

    /// Tags of one purpose are not tags of another (the handle key's tags are labelled).
    @Test func tagsAreBoundToTheirPurpose() {
        let message: [UInt8] = Array("m".utf8)
        #expect(Self.handles.tag(message, purpose: "a") != Self.handles.tag(message, purpose: "b"))
        #expect(Self.handles.tag(message, purpose: "a") == Self.handles.tag(message, purpose: "a"))
        #expect(Self.handles.tag(message, purpose: "a").count == 32)
    }
}
