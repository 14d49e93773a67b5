import Rules
import JSON
import TestRandom

/// The benchmark's workload: a 50-rule authentication ruleset of the shapes tenants write (IP
/// reputation, country lists, amount tiers per merchant category, device models, office
/// geofences, night-time new devices, method checks) and request facts that most rules do not
/// match, so that evaluation walks far into the list before a late rule or the catch-all answers.
enum BenchWorkload {
    /// The tenant's location lists.
    static let locations: [String: [GeoPoint]] = [
        "offices": [
            GeoPoint(latitude: 48.8566, longitude: 2.3522)!, GeoPoint(latitude: 51.5074, longitude: -0.1278)!,
            GeoPoint(latitude: 52.5200, longitude: 13.4050)!, GeoPoint(latitude: 40.7128, longitude: -74.0060)!,
            GeoPoint(latitude: 35.6762, longitude: 139.6503)!,
        ]
    ]

    /// The ruleset as its wire JSON.
    static var rulesetJSON: JSONValue {
        var rules: [JSONValue] = []
        func rule(_ name: String, _ when: JSONValue?, _ action: String, sequences: [[String]]? = nil) {
            var members: [String: JSONValue] = ["name": .string(name), "action": .string(action)]
            if let when { members["when"] = when }
            if let sequences {
                members["sequences"] = .array(sequences.map { .array($0.map(JSONValue.string)) })
            }
            rules.append(.object(members))
        }
        func fact(_ path: String, _ op: String, _ value: JSONValue) -> JSONValue {
            ["fact": .string(path), "op": .string(op), "value": value]
        }
        let torBlocks: [JSONValue] = (0..<24).map { .string("185.220.\($0 * 4).0/22") }
            + ["2a0b:f4c0::/32", "2001:67c:e60::/48"]
        rule("tor-exit-nodes", fact("signals.ip", "inCidr", .array(torBlocks)), "DENY")
        let countries: [JSONValue] = ["KP", "IR", "SY", "CU", "RU", "BY", "VE", "MM", "SD", "ZW"].map { .string($0) }
        rule("sanctioned-countries", fact("signals.country", "in", .array(countries)), "DENY")
        rule("locked-out", fact("user.failedAttempts", "gte", 10), "DENY")
        for (i, category) in ["travel", "jewelry", "electronics", "gambling", "crypto", "gift_cards", "luxury",
            "wire", "pawn", "betting"].enumerated()
        {
            rule(
                "amount-\(category)",
                ["all": [
                    fact("context.transactionAmount", "gt", .int(Int64(2_000 + 500 * i))),
                    fact("context.merchantCategory", "eq", .string(category)),
                ]],
                "TRIGGER_AUTHENTICATION", sequences: [["fido2", "sms_otp"]])
        }
        for i in 0..<10 {
            rule(
                "old-device-\(i)",
                ["all": [
                    fact("signals.deviceModel", "eq", .string("Phone-\(i)")),
                    fact("signals.osVersion", "lt", .string("1\(i).0")),
                ]],
                "TRIGGER_AUTHENTICATION", sequences: [["fido2"], ["totp", "email_otp"]])
        }
        for i in 0..<7 {
            rule(
                "office-hours-\(i)",
                ["all": [
                    fact("signals.geo", "withinKm", ["km": .double(0.5 + Double(i)), "of": "offices"]),
                    fact("time.weekday", "eq", .int(Int64(i + 1))),
                    fact("signals.newDevice", "eq", false),
                ]],
                "ALLOW")
        }
        for i in 0..<5 {
            rule(
                "night-new-device-\(i)",
                ["all": [
                    ["any": [fact("time.hour", "lt", .int(Int64(1 + i))), fact("time.hour", "gte", .int(Int64(23)))]],
                    fact("signals.newDevice", "eq", true),
                    fact("user.daysSinceLastSignIn", "gt", .int(Int64(30 * (i + 1)))),
                ]],
                "TRIGGER_AUTHENTICATION", sequences: [["fido2", "sms_otp"], ["uaf", "sms_otp"]])
        }
        for (i, method) in ["uaf", "totp", "photo_id", "external_jwt", "password"].enumerated() {
            rule(
                "only-\(method)",
                ["all": [
                    fact("user.registeredMethods", "contains", .string(method)),
                    ["not": fact("user.lockedMethods", "contains", .string(method))],
                    fact("context.transactionAmount", "gt", .int(Int64(50_000 + i))),
                ]],
                "TRIGGER_AUTHENTICATION", sequences: [[method]])
        }
        for (i, agent) in ["HeadlessChrome", "PhantomJS", "python-requests", "curl/"].enumerated() {
            rule(
                "automation-\(i)",
                ["all": [
                    fact("signals.userAgent", "contains", .string(agent)),
                    fact("context.channel", "ne", "api"),
                ]],
                "DENY")
        }
        rule("dormant-account", fact("user.daysSinceLastSignIn", "gt", 365), "TRIGGER_AUTHENTICATION", sequences: [["fido2", "email_otp"]])
        rule(
            "weekend-large-amount",
            ["all": [fact("time.weekday", "in", [6, 7]), fact("context.transactionAmount", "gt", 20_000)]],
            "TRIGGER_AUTHENTICATION", sequences: [["fido2", "sms_otp"]])
        rule("beta-os", fact("signals.osVersion", "gte", "20"), "TRIGGER_AUTHENTICATION", sequences: [["fido2"]])
        rule("corporate-network", fact("signals.ip", "inCidr", ["10.0.0.0/8", "172.16.0.0/12"]), "ALLOW")
        rule("no-device-model", fact("signals.deviceModel", "exists", false), "TRIGGER_AUTHENTICATION", sequences: [["fido2"]])
        rule("catch-all", nil, "TRIGGER_AUTHENTICATION", sequences: [["fido2"], ["fido2", "sms_otp"]])
        return ["rules": .array(rules)]
    }

    /// `count` request facts, varied by a fixed seed, that the early rules mostly do not match.
    static func facts(count: Int) -> [JSONValue] {
        var random = SplitMix64(seed: 0x5167_6E65_7452_756C)
        let models = ["Pixel-8", "iPhone15,2", "Phone-3", "SM-S918B", "Phone-7"]
        let categories = ["groceries", "fuel", "travel", "books", "electronics", "restaurants"]
        let agents = [
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 Chrome/126.0 Safari/537.36",
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148",
            "SignetSDK/2.4 (Android 14; Pixel 8)",
        ]
        return (0..<count).map { _ -> JSONValue in
            let ip = "\(random.next(in: 1...223)).\(random.next(in: 0...255)).\(random.next(in: 0...255)).\(random.next(in: 1...254))"
            return [
                "signals": [
                    "ip": .string(ip),
                    "country": .string(["FR", "DE", "GB", "US", "JP", "IT"][random.next(in: 0...5)]),
                    "geo": ["lat": .double(Double(random.next(in: -60...60)) + 0.25), "lon": .double(Double(random.next(in: -170...170)) + 0.5)],
                    "deviceModel": .string(models[random.next(in: 0...4)]),
                    "osVersion": .string("1\(random.next(in: 4...9)).\(random.next(in: 0...3))"),
                    "newDevice": .bool(random.next(in: 0...3) == 0),
                    "userAgent": .string(agents[random.next(in: 0...2)]),
                ],
                "context": [
                    "transactionAmount": .int(Int64(random.next(in: 1...3_000))),
                    "merchantCategory": .string(categories[random.next(in: 0...5)]),
                    "channel": "web",
                ],
                "user": [
                    "registeredMethods": ["fido2", "sms_otp"],
                    "lockedMethods": [],
                    "failedAttempts": .int(Int64(random.next(in: 0...3))),
                    "daysSinceLastSignIn": .int(Int64(random.next(in: 0...20))),
                ],
                "time": ["hour": .int(Int64(random.next(in: 6...21))), "weekday": .int(Int64(random.next(in: 1...7)))],
            ]
        }
    }
}

