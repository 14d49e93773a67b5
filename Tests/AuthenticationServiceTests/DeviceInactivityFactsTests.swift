import Foundation
import JSON
import Schema
import Testing

@testable import AuthenticationService

/// Rules see a bound device as the oob service does: active while it was used within
/// `SIGNET_OOB_INACTIVE_DAYS` (the last call comes with the device's events, to the day).
@Suite struct DeviceInactivityFactsTests {
    static let now = Date(timeIntervalSince1970: 1_780_000_000)
    static let day: TimeInterval = 86_400

    static func facts(_ devices: [DeviceReadModel.Device], signalDevice: String? = nil, inactiveDays: Double = 90) -> JSONValue {
        var user = UserFacts(
            username: "kim", credentials: [], failures: AntiHammering.UserRecord(), lastSignIn: nil, registrationAnswer: nil, registrationAnsweredAt: nil)
        user.devices = devices
        user.deviceInactiveAfter = inactiveDays * day
        var signals: [String: JSONValue] = [:]
        if let signalDevice { signals["deviceId"] = .string(signalDevice) }
        return UserFactsLoader.facts(signals: signals, context: [:], user: user, methods: [], settings: AuthenticationSettings(), now: now)
    }

    static func value(_ facts: JSONValue, _ path: [String]) -> JSONValue? {
        var current: JSONValue? = facts
        for key in path {
            guard case .object(let o)? = current else { return nil }
            current = o[key]
        }
        return current
    }

    @Test func aDeviceUnusedForLongerThanThePeriodIsNotActive() {
        let recent = DeviceReadModel.Device(id: "dv_a", platform: "ios", securityEnabled: true, lastSeenAt: Self.now - 89 * Self.day)
        let stale = DeviceReadModel.Device(id: "dv_b", platform: "android", securityEnabled: false, lastSeenAt: Self.now - 91 * Self.day)
        let unknown = DeviceReadModel.Device(id: "dv_c", platform: "ios", securityEnabled: true, lastSeenAt: nil)

        #expect(Self.value(Self.facts([recent]), ["user", "devices", "active"]) == .bool(true))
        #expect(Self.value(Self.facts([stale]), ["user", "devices", "active"]) == .bool(false))
        #expect(Self.value(Self.facts([stale]), ["user", "devices", "count"]) == .int(1))
        #expect(Self.value(Self.facts([stale, recent]), ["user", "devices", "active"]) == .bool(true))
        // The tenant's period decides: 30 days makes the 89-day-old call stale too.
        #expect(Self.value(Self.facts([recent], inactiveDays: 30), ["user", "devices", "active"]) == .bool(false))
        // Events of an older producer carry no last call: the device counts as active.
        #expect(Self.value(Self.facts([unknown]), ["user", "devices", "active"]) == .bool(true))
        // The device a request names carries its own activity.
        #expect(Self.value(Self.facts([stale, recent], signalDevice: "dv_b"), ["device", "active"]) == .bool(false))
        #expect(Self.value(Self.facts([stale, recent], signalDevice: "dv_a"), ["device", "active"]) == .bool(true))
    }
}
