import JSON
import Rules
import Testing

/// Facts about a user's bound devices (`user.devices.*`, from the oob service's events) and
/// the device a request comes from (`device.*`): rules read them like any fact, and a ruleset
/// can offer `oob_push` only to a user with an active device, or ask more of a device whose
/// security got disabled.
@Suite struct DeviceFactsTests {
    static let ruleset = """
        {"rules": [
          {"name": "insecure-device", "when": {"fact": "device.securityEnabled", "op": "eq", "value": false}, "action": "DENY"},
          {"name": "push", "when": {"fact": "user.devices.active", "op": "eq", "value": true},
           "action": "TRIGGER_AUTHENTICATION", "sequences": [["oob_push"]]},
          {"name": "passkey", "action": "TRIGGER_AUTHENTICATION", "sequences": [["fido2"]]}]}
        """

    static func facts(devices: JSONValue?, device: JSONValue? = nil) -> JSONValue {
        var user: [String: JSONValue] = [:]
        if let devices { user["devices"] = devices }
        var roots: [String: JSONValue] = ["context": [:], "signals": [:], "user": .object(user), "time": [:]]
        if let device { roots["device"] = device }
        return .object(roots)
    }

    @Test func theDeviceRootIsAFactPath() {
        let path = FactPath("device.securityEnabled")
        #expect(path?.root == .device && path?.segments == ["securityEnabled"])
        #expect(FactPath("device") == nil)
        #expect(FactPath("devices.securityEnabled") == nil)
    }

    @Test func pushIsOfferedOnlyToAUserWithAnActiveDevice() throws {
        let compiled = try RulesTestSupport.compile(Self.ruleset)
        let withDevice = compiled.evaluate(Self.facts(devices: ["count": 1, "active": true, "securityEnabled": true]))
        #expect(withDevice.matchedRule == "push" && withDevice.sequences == [["oob_push"]])
        let without = compiled.evaluate(Self.facts(devices: ["count": 0, "active": false, "securityEnabled": false]))
        #expect(without.matchedRule == "passkey" && without.sequences == [["fido2"]])
        // A service that supplies no device facts: the fact is missing, the rule does not match.
        #expect(compiled.evaluate(Self.facts(devices: nil)).matchedRule == "passkey")
    }

    @Test func aDeviceWhoseSecurityIsDisabledIsSeen() throws {
        let compiled = try RulesTestSupport.compile(Self.ruleset)
        let devices: JSONValue = ["count": 1, "active": true, "securityEnabled": false]
        #expect(compiled.evaluate(Self.facts(devices: devices, device: ["securityEnabled": false, "platform": "ios"])).matchedRule == "insecure-device")
        #expect(compiled.evaluate(Self.facts(devices: devices, device: ["securityEnabled": true, "platform": "ios"])).matchedRule == "push")
        // A request from no known device: no device facts.
        #expect(compiled.evaluate(Self.facts(devices: devices)).matchedRule == "push")
    }
}
